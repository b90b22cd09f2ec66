"""SQL text -> SQL AST with the lark grammar in sql.lark.

Syntax errors become SqlSyntaxError with line and column; constructs the grammar knows but
toaster does not support yet become UnsupportedError at their position.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from toaster.errors import SqlSyntaxError, UnsupportedError, ToasterError, SemanticError
from toaster.frontend import ast as A
from toaster.schema import Column, RelationDecl, Source
from toaster.types import INT, FLOAT, DATE, STRING, BOOL, type_from_name, date_to_int


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "sql.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _pos(x) -> A.Pos:
    if isinstance(x, Token):
        return A.Pos(x.line, x.column)
    meta = getattr(x, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return A.Pos(meta.line, meta.column)
    return A.NOPOS


def _unquote(tok: Token) -> str:
    return str(tok)[1:-1]


def _unsupported(what: str, pos: A.Pos):
    raise UnsupportedError(what, line=pos.line, column=pos.column)


_CMP = {"<>": "!=", "!=": "!=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _ToAst(Transformer):
    """Parse tree -> AST. Methods get children; positions come from tokens or meta."""

    def __init__(self, text: str, file: str | None, include_base: str | None):
        super().__init__()
        self.text = text
        self.file = file
        self.include_base = include_base

    # -------------------------------------------------------------- statements
    @v_args(meta=True)
    def start(self, meta, children):
        return list(children)

    @v_args(meta=True)
    def include_stmt(self, meta, children):
        return A.Include(_unquote(children[1]), A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def create_rel(self, meta, children):
        kind_tok, name_tok = children[1], children[2]
        cols, source = [], None
        for c in children[3:]:
            if isinstance(c, Column):
                cols.append(c)
            elif isinstance(c, Source):
                source = c
        names = [c.name for c in cols]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise SemanticError(f"duplicate column {n} in {name_tok.upper()}",
                                    line=name_tok.line, column=name_tok.column)
        decl = RelationDecl(str(name_tok).upper(), tuple(cols), str(kind_tok).lower(), source)
        return A.CreateRelation(decl, A.Pos(meta.line, meta.column))

    def column_def(self, children):
        name, t = children
        return Column(str(name).upper(), t)

    def type_name(self, children):
        tok = children[0]
        try:
            return type_from_name(str(tok))
        except KeyError:
            raise SemanticError(f"unknown column type {tok}", line=tok.line, column=tok.column) from None

    def source(self, children):
        path = _unquote(children[2])
        framing = children[3]
        name, params = children[4]
        if framing != "line":
            _unsupported(f"{framing} framing (only LINE DELIMITED)", _pos(children[3]) if isinstance(children[3], Token) else A.NOPOS)
        return Source(path, name, params)

    def line_delimited(self, children):
        return "line"

    def fixed_width(self, children):
        return "FIXEDWIDTH"

    def sep_delimited(self, children):
        return "'x' DELIMITED"

    def adaptor(self, children):
        name = str(children[0]).lower()
        params = tuple(c for c in children[1:] if c is not None)
        return name, params

    def adaptor_param(self, children):
        return str(children[0]).lower(), _unquote(children[1])

    # ----------------------------------------------------------------- queries
    @v_args(meta=True)
    def query_stmt(self, meta, children):
        selects = [c for c in children if isinstance(c, A.Select)]
        if len(selects) > 1:
            tok = next(c for c in children if isinstance(c, Token))
            _unsupported("UNION", _pos(tok))
        sel = selects[0]
        text = self.text[meta.start_pos:meta.end_pos] if not meta.empty else ""
        return A.Select(sel.targets, sel.from_items, sel.where, sel.group_by, sel.distinct,
                        sel.pos, text, sel.unsupported)

    @v_args(meta=True)
    def select_query(self, meta, children):
        pos = A.Pos(meta.line, meta.column)
        distinct = False
        targets, from_items, where, group_by = (), (), None, ()
        for c in children:
            if isinstance(c, Token) and c.type == "DISTINCT":
                _unsupported("SELECT DISTINCT", _pos(c))
            elif isinstance(c, tuple) and c and c[0] == "targets":
                targets = c[1]
            elif isinstance(c, tuple) and c and c[0] == "from":
                from_items = c[1]
            elif isinstance(c, tuple) and c and c[0] == "where":
                where = c[1]
            elif isinstance(c, tuple) and c and c[0] == "group":
                group_by = c[1]
        return A.Select(tuple(targets), tuple(from_items), where, tuple(group_by), distinct, pos)

    def target_list(self, children):
        return ("targets", tuple(children))

    @v_args(meta=True)
    def star_target(self, meta, children):
        _unsupported("SELECT *", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def rel_star_target(self, meta, children):
        _unsupported("SELECT R.*", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def expr_target(self, meta, children):
        expr = children[0]
        alias = None
        for c in children[1:]:
            if isinstance(c, Token) and c.type == "NAME":
                alias = str(c).upper()
        return A.Target(expr, alias, A.Pos(meta.line, meta.column))

    def from_clause(self, children):
        return ("from", tuple(c for c in children if not isinstance(c, Token)))

    @v_args(meta=True)
    def rel_item(self, meta, children):
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        rel = str(names[0]).upper()
        alias = str(names[1]).upper() if len(names) > 1 else rel
        return A.RelItem(rel, alias, A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def subquery_item(self, meta, children):
        _unsupported("subquery in FROM", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def natural_join(self, meta, children):
        _unsupported("NATURAL JOIN", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def on_join(self, meta, children):
        _unsupported("JOIN ... ON (use a comma join with WHERE)", A.Pos(meta.line, meta.column))

    def where_clause(self, children):
        return ("where", children[1])

    def group_clause(self, children):
        return ("group", tuple(c for c in children if not isinstance(c, Token)))

    def having_clause(self, children):
        _unsupported("HAVING", _pos(children[0]))

    def order_clause(self, children):
        _unsupported("ORDER BY", _pos(children[0]))

    def limit_clause(self, children):
        _unsupported("LIMIT", _pos(children[0]))

    # -------------------------------------------------------------- conditions
    def or_cond(self, children):
        args = [c for c in children if not isinstance(c, Token)]
        tok = next(c for c in children if isinstance(c, Token))
        return A.Or(tuple(args), _pos(tok))

    def and_cond(self, children):
        args = []
        for c in children:
            if isinstance(c, Token):
                continue
            args.extend(c.args if isinstance(c, A.And) else [c])
        tok = next(c for c in children if isinstance(c, Token))
        return A.And(tuple(args), _pos(tok))

    def not_cond(self, children):
        return A.NotCond(children[1], _pos(children[0]))

    def comparison(self, children):
        left, op, right = children
        return A.Comparison(_CMP[str(op)], left, right, _pos(op))

    @v_args(meta=True)
    def between(self, meta, children):
        _unsupported("BETWEEN", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def in_list(self, meta, children):
        _unsupported("IN (...)", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def in_query(self, meta, children):
        _unsupported("IN (subquery)", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def exists(self, meta, children):
        _unsupported("EXISTS", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def like(self, meta, children):
        _unsupported("LIKE", A.Pos(meta.line, meta.column))

    @v_args(meta=True)
    def is_null(self, meta, children):
        _unsupported("IS NULL (NULLs)", A.Pos(meta.line, meta.column))

    def true_cond(self, children):
        return A.BoolConst(True, _pos(children[0]))

    def false_cond(self, children):
        return A.BoolConst(False, _pos(children[0]))

    # ------------------------------------------------------------- expressions
    def binop(self, children):
        left, op, right = children
        return A.BinaryOp(str(op), left, right, _pos(op))

    @v_args(meta=True)
    def negate(self, meta, children):
        return A.Negate(children[0], A.Pos(meta.line, meta.column))

    def int_lit(self, children):
        t = children[0]
        return A.Literal(int(t), INT, _pos(t))

    def float_lit(self, children):
        t = children[0]
        return A.Literal(float(t), FLOAT, _pos(t))

    def string_lit(self, children):
        t = children[0]
        return A.Literal(_unquote(t), STRING, _pos(t))

    def date_lit(self, children):
        t = children[1]
        try:
            return A.Literal(date_to_int(_unquote(t)), DATE, _pos(children[0]))
        except ValueError as e:
            raise SemanticError(str(e), line=t.line, column=t.column) from None

    def interval_lit(self, children):
        _unsupported("INTERVAL", _pos(children[0]))

    def case_expr(self, children):
        _unsupported("CASE", _pos(children[0]))

    def agg_star(self, children):
        t = children[0]
        name = str(t).upper()
        if name != "COUNT":
            raise SqlSyntaxError(f"{name}(*) is not valid; only COUNT(*)", line=t.line, column=t.column)
        return A.AggCall("COUNT", (), False, _pos(t))

    def agg_expr(self, children):
        t = children[0]
        name = str(t).upper()
        distinct = any(isinstance(c, Token) and c.type == "DISTINCT" for c in children[1:])
        args = tuple(c for c in children[1:] if not isinstance(c, Token))
        if name in ("MIN", "MAX", "AVG"):
            _unsupported(f"{name} aggregate", _pos(t))
        if distinct:
            _unsupported(f"{name}(DISTINCT ...)", _pos(t))
        if len(args) != 1:
            raise SemanticError(f"{name} takes one argument", line=t.line, column=t.column)
        return A.AggCall(name, args, False, _pos(t))

    def func_call(self, children):
        t = children[0]
        _unsupported(f"function {str(t).lower()}()", _pos(t))

    def qualified_col(self, children):
        q, n = children
        return A.ColumnRef(str(q).upper(), str(n).upper(), _pos(q))

    def column(self, children):
        n = children[0]
        return A.ColumnRef(None, str(n).upper(), _pos(n))

    @v_args(meta=True)
    def scalar_subquery(self, meta, children):
        _unsupported("scalar subquery", A.Pos(meta.line, meta.column))


def parse_sql(text: str, file: str | None = None, base_dir: str | None = None,
              _seen: frozenset = frozenset()) -> A.SqlProgram:
    """Parse a whole query file (with its INCLUDEs) into an SqlProgram (unresolved)."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise SqlSyntaxError(_syntax_message(e, text), file=file, line=e.line, column=e.column) from None
    try:
        stmts = _ToAst(text, file, base_dir).transform(tree)
    except VisitError as e:
        inner = e.orig_exc
        if isinstance(inner, ToasterError):
            raise inner.located(file) from None
        raise
    relations, selects = [], []
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
            relations.extend(sub.relations)
            selects.extend(sub.selects)
        elif isinstance(s, A.CreateRelation):
            if any(r.name == s.decl.name for r in relations):
                raise SemanticError(f"relation {s.decl.name} is declared twice", file=file,
                                    line=s.pos.line, column=s.pos.column)
            relations.append(s.decl)
        elif isinstance(s, A.Select):
            selects.append(s)
    return A.SqlProgram(tuple(relations), tuple(selects), file)


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
