"""SQL text -> SQL AST with the lark grammar in sql.lark.

Syntax errors become SqlSyntaxError with line and column. Purely syntactic normalizations
happen here (they need no names or types): BETWEEN -> And(>=, <=); IN (value list) -> Or of
equalities; `<>` -> `!=`; ANY -> SOME; NOT over EXISTS / IN (subquery) / LIKE -> their negated
flag; simple CASE -> searched CASE; EXTRACT(p FROM d) -> date_part('p', d); CAST(x AS t) ->
cast_t(x); DATE('...') ± INTERVAL 'n' YEAR|MONTH|DAY -> a DATE literal. Constructs that are
refused by design raise UnsupportedError at their position.
"""
from __future__ import annotations

import calendar
import datetime
import os
from decimal import Decimal
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from toaster.errors import SqlSyntaxError, UnsupportedError, ToasterError, SemanticError
from toaster.frontend import ast as A
from toaster.schema import Column, RelationDecl, Source, physical_columns
from toaster.types import INT, FLOAT, DATE, STRING, Type, type_from_name, date_to_int


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "sql.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False,
                cache=True)     # lark keeps the LALR tables in a temp file: ~0.4 s off every start


def _pos(x) -> A.Pos:
    if isinstance(x, Token):
        return A.Pos(x.line, x.column)
    meta = getattr(x, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return A.Pos(meta.line, meta.column)
    return getattr(x, "pos", A.NOPOS)


def _mpos(meta) -> A.Pos:
    return A.Pos(meta.line, meta.column) if not meta.empty else A.NOPOS


def _unquote(tok: Token) -> str:
    return str(tok)[1:-1].replace("''", "'")


def _unsupported(what: str, pos: A.Pos):
    raise UnsupportedError(what, line=pos.line or None, column=pos.column or None)


def _nodes(children) -> list:
    """The children that are AST values (not keyword tokens)."""
    return [c for c in children if not isinstance(c, Token)]


def _has(children, token_type: str) -> bool:
    return any(isinstance(c, Token) and c.type == token_type for c in children)


_CMP = {"<>": "!=", "!=": "!=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_CAST_FUNCS = {INT: "cast_int", FLOAT: "cast_float", STRING: "cast_string", DATE: "cast_date"}
_INTERVAL_UNITS = {"YEAR": "YEAR", "YEARS": "YEAR", "MONTH": "MONTH", "MONTHS": "MONTH",
                   "DAY": "DAY", "DAYS": "DAY"}


def add_interval(date: int, n: int, unit: str) -> int:
    """YYYYMMDD + n units; month/year steps clamp the day to the month's end (as DuckDB does)."""
    y, m, d = date // 10000, date // 100 % 100, date % 100
    if unit == "DAY":
        t = datetime.date(y, m, d) + datetime.timedelta(days=n)
        return t.year * 10000 + t.month * 100 + t.day
    months = y * 12 + (m - 1) + (n if unit == "MONTH" else 12 * n)
    y, m = divmod(months, 12)
    m += 1
    d = min(d, calendar.monthrange(y, m)[1])
    return y * 10000 + m * 100 + d


class _ToAst(Transformer):
    """Parse tree -> AST. Methods get children; positions come from tokens or meta."""

    def __init__(self, text: str, file: str | None):
        super().__init__()
        self.text = text
        self.file = file
        self.intervals: dict[int, tuple] = {}   # id(Unsupported placeholder) -> (n, unit)

    # -------------------------------------------------------------- statements
    def start(self, children):
        return list(children)

    @v_args(meta=True)
    def include_stmt(self, meta, children):
        return A.Include(_unquote(children[1]), _mpos(meta))

    @v_args(meta=True)
    def create_rel(self, meta, children):
        kind_tok, name_tok = children[1], children[2]
        cols, source = [], None
        for c in children[3:]:
            if isinstance(c, Column):
                cols.append(c)
            elif isinstance(c, Source):
                source = c
        cols = physical_columns(cols)
        names = [c.name for c in cols]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise SemanticError(f"duplicate column {n} in {name_tok.upper()}"
                                    + (" (the null flag of a nullable column)" if cols[i].flag_of else ""),
                                    line=name_tok.line, column=name_tok.column)
        decl = RelationDecl(str(name_tok).upper(), tuple(cols), str(kind_tok).lower(), source)
        return A.CreateRelation(decl, _mpos(meta))

    def column_def(self, children):
        name, t = children[0], children[1]
        # `NULL` declares a nullable column; plain and NOT NULL columns never hold NULL, as in
        # DBToaster's dialect, and cost nothing extra
        return Column(str(name).upper(), t, nullable=len(children) > 2 and children[2])

    def null_spec(self, children):
        return not any(isinstance(c, Token) and c.type == "NOT" for c in children)

    def type_name(self, children):
        tok = children[0]
        try:
            return type_from_name(str(tok))
        except KeyError:
            raise SemanticError(f"unknown column type {tok}", line=tok.line, column=tok.column) from None

    @v_args(meta=True)
    def create_func(self, meta, children):
        name = children[2]
        params = [c for c in children[3:] if isinstance(c, tuple)]
        ret = next(c for c in children if isinstance(c, Type))
        external = _unquote(children[-1])
        return A.CreateFunction(str(name).lower(), tuple(t for _, t in params), ret, external, _mpos(meta))

    def func_param(self, children):
        return (str(children[0]).upper(), children[1])

    def source(self, children):
        path = _unquote(children[2])
        framing = children[3]
        name, params = children[4]
        if framing != "line":
            _unsupported(f"{framing} framing (only LINE DELIMITED)", _pos(children[2]))
        return Source(path, name, params)

    def line_delimited(self, children):
        return "line"

    def fixed_width(self, children):
        return "FIXEDWIDTH"

    def sep_delimited(self, children):
        return "'x' DELIMITED"

    def adaptor(self, children):
        name = str(children[0]).lower()
        params = tuple(c for c in children[1:] if isinstance(c, tuple))
        return name, params

    def adaptor_param(self, children):
        return str(children[0]).lower(), _unquote(children[1])

    # ----------------------------------------------------------------- queries
    def _setop(self, meta, op, left, right):
        text = self.text[meta.start_pos:meta.end_pos]
        order_by, limit = (), None
        if (right.order_by or right.limit is not None) and not text.rstrip().endswith(")"):
            # standard SQL (and DuckDB) read an ORDER BY / LIMIT after the last, unparenthesized
            # operand as those of the whole set operation, not of that operand
            order_by, limit = right.order_by, right.limit
            right = replace(right, order_by=(), limit=None)
        return A.SetOp(op, left, right, _mpos(meta), text, order_by, limit)

    @v_args(meta=True)
    def ordered_query(self, meta, children):
        """`(q1) UNION (q2) ORDER BY ... LIMIT n`: the clauses of the whole statement."""
        q = children[0]
        parts = {c[0]: c[1] for c in children[1:] if isinstance(c, tuple)}
        if q.order_by or q.limit is not None:
            _unsupported("a second ORDER BY or LIMIT on the same query", _mpos(meta))
        return replace(q, order_by=parts.get("order", ()), limit=parts.get("limit"),
                       text=self.text[meta.start_pos:meta.end_pos])

    @v_args(meta=True)
    def union(self, meta, children):
        left, right = _nodes(children)
        return self._setop(meta, "UNION ALL" if _has(children, "ALL") else "UNION", left, right)

    @v_args(meta=True)
    def except_(self, meta, children):
        left, right = _nodes(children)
        return self._setop(meta, "EXCEPT", left, right)

    @v_args(meta=True)
    def intersect(self, meta, children):
        left, right = _nodes(children)
        return self._setop(meta, "INTERSECT", left, right)

    @v_args(meta=True)
    def select_query(self, meta, children):
        parts = {c[0]: c for c in children if isinstance(c, tuple)}
        targets = parts["targets"]
        return A.Select(
            targets=targets[1],
            from_items=parts["from"][1] if "from" in parts else (),
            where=parts["where"][1] if "where" in parts else None,
            group_by=parts["group"][1] if "group" in parts else (),
            distinct=_has(children, "DISTINCT"),
            pos=_mpos(meta),
            text=self.text[meta.start_pos:meta.end_pos],
            having=parts["having"][1] if "having" in parts else None,
            order_by=parts["order"][1] if "order" in parts else (),
            limit=parts["limit"][1] if "limit" in parts else None,
            targets_end=targets[2])

    @v_args(meta=True)
    def target_list(self, meta, children):
        return ("targets", tuple(children), meta.end_pos)

    @v_args(meta=True)
    def star_target(self, meta, children):
        return A.Target(A.Star(None, _mpos(meta)), None, _mpos(meta))

    @v_args(meta=True)
    def rel_star_target(self, meta, children):
        return A.Target(A.Star(str(children[0]).upper(), _mpos(meta)), None, _mpos(meta))

    @v_args(meta=True)
    def expr_target(self, meta, children):
        expr = children[0]
        alias = None
        for c in children[1:]:
            if isinstance(c, Token) and c.type == "NAME":
                alias = str(c).upper()
        return A.Target(expr, alias, _mpos(meta))

    def from_clause(self, children):
        return ("from", tuple(_nodes(children)))

    @v_args(meta=True)
    def rel_item(self, meta, children):
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        rel = str(names[0]).upper()
        alias = str(names[1]).upper() if len(names) > 1 else rel
        return A.RelItem(rel, alias, _mpos(meta))

    @v_args(meta=True)
    def subquery_item(self, meta, children):
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        if not names:
            raise SemanticError("a subquery in FROM needs an alias", line=meta.line, column=meta.column)
        return A.SubqueryItem(_nodes(children)[0], str(names[0]).upper(), _mpos(meta))

    @v_args(meta=True)
    def natural_join(self, meta, children):
        left, right = _nodes(children)
        return A.Join("NATURAL", left, right, None, _mpos(meta))

    @v_args(meta=True)
    def cross_join(self, meta, children):
        left, right = _nodes(children)
        return A.Join("CROSS", left, right, None, _mpos(meta))

    @v_args(meta=True)
    def inner_join(self, meta, children):
        nodes = _nodes(children)
        on = nodes[2] if len(nodes) > 2 else None
        return A.Join("INNER", nodes[0], nodes[1], on, _mpos(meta))

    @v_args(meta=True)
    def outer_join(self, meta, children):
        kind = next(str(c).upper() for c in children if isinstance(c, Token) and c.type == "OUTER_KIND")
        nodes = _nodes(children)
        if len(nodes) < 3:
            raise SemanticError(f"{kind} JOIN needs an ON condition", line=meta.line, column=meta.column)
        return A.Join(kind, nodes[0], nodes[1], nodes[2], _mpos(meta))

    def where_clause(self, children):
        return ("where", children[1])

    def group_clause(self, children):
        return ("group", tuple(_nodes(children)))

    def having_clause(self, children):
        return ("having", children[1])

    def order_clause(self, children):
        return ("order", tuple(_nodes(children)))

    @v_args(meta=True)
    def order_item(self, meta, children):
        return A.OrderItem(children[0], _has(children, "DESC"), _mpos(meta))

    def limit_clause(self, children):
        return ("limit", int(children[1]))

    # -------------------------------------------------------------- conditions
    def or_cond(self, children):
        args = []
        for c in _nodes(children):
            args.extend(c.args if isinstance(c, A.Or) else [c])
        tok = next(c for c in children if isinstance(c, Token))
        return A.Or(tuple(args), _pos(tok))

    def and_cond(self, children):
        args = []
        for c in _nodes(children):
            args.extend(c.args if isinstance(c, A.And) else [c])
        tok = next(c for c in children if isinstance(c, Token))
        return A.And(tuple(args), _pos(tok))

    def not_cond(self, children):
        arg, pos = children[1], _pos(children[0])
        if isinstance(arg, (A.Exists, A.InQuery, A.Like)):
            return replace(arg, negated=not arg.negated, pos=pos)
        return A.NotCond(arg, pos)

    def comparison(self, children):
        left, op, right = children
        return A.Comparison(_CMP[str(op)], left, right, _pos(op))

    def quantified(self, children):
        left, op, quant, query = children
        q = "ALL" if str(quant).upper() == "ALL" else "SOME"
        return A.Quantified(_CMP[str(op)], left, q, query, _pos(op))

    def between(self, children):
        expr, lo, hi = _nodes(children)
        tok = next(c for c in children if isinstance(c, Token) and c.type == "BETWEEN")
        pos = _pos(tok)
        cond = A.And((A.Comparison(">=", expr, lo, pos), A.Comparison("<=", expr, hi, pos)), pos)
        return A.NotCond(cond, pos) if _has(children, "NOT") else cond

    def in_list(self, children):
        expr, *values = _nodes(children)
        pos = _pos(next(c for c in children if isinstance(c, Token) and c.type == "IN"))
        eqs = tuple(A.Comparison("=", expr, v, pos) for v in values)
        cond = eqs[0] if len(eqs) == 1 else A.Or(eqs, pos)
        return A.NotCond(cond, pos) if _has(children, "NOT") else cond

    def in_query(self, children):
        expr, query = _nodes(children)
        pos = _pos(next(c for c in children if isinstance(c, Token) and c.type == "IN"))
        return A.InQuery(expr, query, _has(children, "NOT"), pos)

    def exists(self, children):
        return A.Exists(children[1], False, _pos(children[0]))

    def like(self, children):
        expr = children[0]
        tok = next(c for c in children if isinstance(c, Token) and c.type == "LIKE")
        return A.Like(expr, _unquote(children[-1]), _has(children, "NOT"), _pos(tok))

    @v_args(meta=True)
    def is_null(self, meta, children):
        return A.IsNull(children[0], _has(children, "NOT"), _mpos(meta))

    def true_cond(self, children):
        return A.BoolConst(True, _pos(children[0]))

    def false_cond(self, children):
        return A.BoolConst(False, _pos(children[0]))

    # ------------------------------------------------------------- expressions
    def binop(self, children):
        left, op, right = children
        op, pos = str(op), _pos(op)
        li, ri = self.intervals.get(id(left)), self.intervals.get(id(right))
        if li or ri:
            if ri and isinstance(left, A.Literal) and left.type == DATE and op in "+-":
                n, unit = ri
                return A.Literal(add_interval(left.value, n if op == "+" else -n, unit), DATE, left.pos)
            if li and isinstance(right, A.Literal) and right.type == DATE and op == "+":
                return A.Literal(add_interval(right.value, li[0], li[1]), DATE, right.pos)
            _unsupported("INTERVAL arithmetic other than DATE('...') ± INTERVAL 'n' YEAR|MONTH|DAY", pos)
        return A.BinaryOp(op, left, right, pos)

    @v_args(meta=True)
    def negate(self, meta, children):
        return A.Negate(children[0], _mpos(meta))

    def int_lit(self, children):
        t = children[0]
        return A.Literal(int(t), INT, _pos(t))

    def float_lit(self, children):
        t = children[0]
        return A.Literal(Decimal(str(t)), FLOAT, _pos(t))   # exact digits (toaster.frontend.constants)

    def string_lit(self, children):
        t = children[0]
        return A.Literal(_unquote(t), STRING, _pos(t))

    def date_lit(self, children):
        t = children[-1]
        try:
            return A.Literal(date_to_int(_unquote(t)), DATE, _pos(children[0]))
        except ValueError as e:
            raise SemanticError(str(e), line=t.line, column=t.column) from None

    def interval_lit(self, children):
        pos = _pos(children[0])
        text, unit_tok = _unquote(children[1]).strip(), children[2]
        unit = _INTERVAL_UNITS.get(str(unit_tok).upper())
        if unit is None:
            _unsupported(f"INTERVAL unit {unit_tok} (only YEAR, MONTH, DAY)", _pos(unit_tok))
        try:
            n = int(text)
        except ValueError:
            raise SemanticError(f"bad INTERVAL amount {text!r} (expected an integer)",
                                line=pos.line, column=pos.column) from None
        node = A.Unsupported("INTERVAL outside DATE('...') ± INTERVAL 'n' YEAR|MONTH|DAY", pos)
        self.intervals[id(node)] = (n, unit)
        return node

    def null_lit(self, children):
        return A.NullLiteral(_pos(children[0]))

    def when_cond(self, children):
        return (children[1], children[3])

    def when_value(self, children):
        return (children[1], children[3])

    def else_branch(self, children):
        return ("else", children[1])

    def case_searched(self, children):
        whens = tuple(c for c in children if isinstance(c, tuple) and c[0] != "else")
        else_ = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "else"), None)
        return A.Case(whens, else_, _pos(children[0]))

    def case_simple(self, children):
        subject = children[1]
        whens = tuple((A.Comparison("=", subject, v, _pos(v)), e)
                      for v, e in (c for c in children[2:] if isinstance(c, tuple) and c[0] != "else"))
        else_ = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "else"), None)
        return A.Case(whens, else_, _pos(children[0]))

    def extract(self, children):
        kw, part, _, expr = children
        name = str(part).lower()
        if name not in ("year", "month", "day"):
            raise SemanticError(f"EXTRACT needs YEAR, MONTH or DAY, not {part}", line=part.line, column=part.column)
        return A.FuncCall("date_part", (A.Literal(name, STRING, _pos(part)), expr), _pos(kw))

    def cast(self, children):
        kw, expr, _, t = children
        fn = _CAST_FUNCS.get(t)
        if fn is None:
            _unsupported(f"CAST to {t}", _pos(kw))
        return A.FuncCall(fn, (expr,), _pos(kw))

    def agg_star(self, children):
        t = children[0]
        name = str(t).upper()
        if name != "COUNT":
            raise SqlSyntaxError(f"{name}(*) is not valid; only COUNT(*)", line=t.line, column=t.column)
        return A.AggCall("COUNT", (), False, _pos(t))

    def agg_distinct_all(self, children):
        # COUNT(DISTINCT) with no argument, as DBToaster's parser accepts it: resolution makes it
        # COUNT(DISTINCT <every column of the FROM clause>) (README "Supported SQL")
        t = children[0]
        name = str(t).upper()
        if name != "COUNT":
            raise SqlSyntaxError(f"{name}(DISTINCT) needs an argument; only COUNT(DISTINCT) may omit it",
                                 line=t.line, column=t.column)
        return A.AggCall("COUNT", (), True, _pos(t))

    def agg_expr(self, children):
        t = children[0]
        name = str(t).upper()
        distinct = _has(children[1:], "DISTINCT")
        args = tuple(_nodes(children[1:]))
        if len(args) != 1 and not (name == "COUNT" and distinct):
            raise SemanticError(f"{name} takes one argument", line=t.line, column=t.column)
        return A.AggCall(name, args, distinct, _pos(t))

    def func_call(self, children):
        t = children[0]
        return A.FuncCall(str(t).lower(), tuple(_nodes(children[1:])), _pos(t))

    def qualified_col(self, children):
        q, n = children
        return A.ColumnRef(str(q).upper(), str(n).upper(), _pos(q))

    def column(self, children):
        n = children[0]
        return A.ColumnRef(None, str(n).upper(), _pos(n))

    @v_args(meta=True)
    def scalar_subquery(self, meta, children):
        return A.ScalarSubquery(children[0], _mpos(meta))


def parse_sql(text: str, file: str | None = None, base_dir: str | None = None,
              _seen: frozenset = frozenset()) -> A.SqlProgram:
    """Parse a whole query file (with its INCLUDEs) into an SqlProgram (unresolved).

    Relative INCLUDE paths are resolved against base_dir if given, else the working directory
    (DIALECT.md §2.4)."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise SqlSyntaxError(_syntax_message(e, text), file=file, line=e.line, column=e.column) from None
    try:
        stmts = _ToAst(text, file).transform(tree)
    except VisitError as e:
        inner = e.orig_exc
        if isinstance(inner, ToasterError):
            raise inner.located(file) from None
        raise
    relations, selects, functions, declared_before = [], [], [], []

    def add_relation(decl, pos, where):
        if any(r.name == decl.name for r in relations):
            raise SemanticError(f"relation {decl.name} is declared twice", file=where,
                                line=pos.line or None, column=pos.column or None)
        relations.append(decl)

    def add_function(f, where):
        if any(g.name == f.name for g in functions):
            raise SemanticError(f"function {f.name} is declared twice", file=where,
                                line=f.pos.line or None, column=f.pos.column or None)
        functions.append(f)

    for s in stmts:
        if isinstance(s, A.Include):
            path = os.path.join(base_dir, s.path) if base_dir and not os.path.isabs(s.path) else s.path
            if path in _seen:
                raise SemanticError(f"INCLUDE cycle through {s.path!r}", file=file, line=s.pos.line, column=s.pos.column)
            try:
                with open(path) as f:
                    inc_text = f.read()
            except OSError as ex:
                raise SemanticError(f"cannot read INCLUDE file {s.path!r}: {ex.strerror}",
                                    file=file, line=s.pos.line, column=s.pos.column) from None
            sub = parse_sql(inc_text, path, base_dir, _seen | {path})
            for k, sel in enumerate(sub.selects):
                nr, nf = sub.declared_before[k]
                declared_before.append((len(relations) + nr, len(functions) + nf))
            for decl in sub.relations:
                add_relation(decl, s.pos, file)
            for fn in sub.functions:
                add_function(fn, path)
            selects.extend(sub.selects)
        elif isinstance(s, A.CreateRelation):
            add_relation(s.decl, s.pos, file)
        elif isinstance(s, A.CreateFunction):
            add_function(s, file)
        elif isinstance(s, (A.Select, A.SetOp)):
            selects.append(s)
            declared_before.append((len(relations), len(functions)))
    return A.SqlProgram(tuple(relations), tuple(selects), file, tuple(functions), tuple(declared_before))


def _syntax_message(e: UnexpectedInput, text: str) -> str:
    tok = getattr(e, "token", None)
    if tok is not None and getattr(tok, "type", None) == "$END":
        return "unexpected end of input"
    if tok is not None:
        return f"unexpected {str(tok)!r}"
    ch = getattr(e, "char", None)
    if ch is not None:
        return f"unexpected character {ch!r}"
    return "invalid syntax"
