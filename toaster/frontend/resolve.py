"""Name resolution, type checking and result naming for query statements (DIALECT.md §3-§6, §9).

resolve_program(prog) returns one ResolvedQuery per top-level statement. Every resolved Select,
at any depth, is normalized (see the lead's contract in the ResolvedQuery docstring):
  * from_items hold RelItem / SubqueryItem / OuterJoinItem; inner JOINs are flattened (ON and NATURAL
    equalities AND-ed into where, ON first) but on an outer join's padded side (JoinedItems);
    every FROM alias is unique in the whole program (a second `R` becomes `R_2`, ...).
  * `*` / `R.*` are expanded; every Target.alias is set to the target's output name (unique in
    its select): the written alias, else the column name of a bare column, else a generated
    __SQL_<SUM|COUNT|AVG|MIN|MAX>_AGGREGATE_n / __SQL_EXPRESSION_n (COUNT(DISTINCT) is a COUNT).
    n comes from one counter shared by all kinds and all statements, advanced for every target
    that contains an aggregate (aliased or not) and every unaliased target that is neither a
    bare column nor `*`, in the order target lists end in the source text.
  * ColumnRef.source is the unique alias of the FROM item providing it (in this select or an
    enclosing one); every expression has .type.
  * group_by holds resolved expressions (aliases and ordinals replaced by the target's
    expression); order_by items refer to result columns (alias, ordinal, or an expression equal
    to one) and hold that column's expression.
"""
from __future__ import annotations

from toaster.recursion import deep
from dataclasses import dataclass, replace

from toaster.errors import SemanticError, UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.traverse import _QUERIES, _kids, _map, check_nesting as _check_nesting, iter_nodes  # noqa: F401
from toaster.frontend.functions import BUILTINS, NULL_FUNCTIONS, builtin_result_type
from toaster.frontend.resolve_joins import JoinResolution
from toaster.frontend.scope import _Scope, _err, _union_type, comparable, output_columns  # noqa: F401
from toaster.types import INT, FLOAT, STRING, promote


@dataclass(frozen=True)
class ResolvedQuery:
    """One top-level statement.

    key_columns: tuple[(output name, expr)]: for an aggregate query the non-aggregate targets in
    SELECT order, then the unselected GROUP BY expressions (named by their column name, else
    __SQL_GROUP_BY_<position>); for a non-aggregate query every target; for a SetOp its output
    columns as ColumnRef(None, name, source=None, type=<promoted type>).
    value_columns: tuple[(output name, expr | None)]: one per aggregate target (the whole target
    expression), or a single (prefix + 'COUNT', None) multiplicity column. Value names get the
    QUERY_<k>_ prefix when the program has several statements; key names never do.
    """
    index: int                 # 1-based position among the program's statements
    name: str                  # 'QUERY_<index>'
    select: object             # resolved A.Select | A.SetOp
    aliases: tuple             # tuple[(alias, RelationDecl)]: RelItems of the top-level FROM
    key_columns: tuple
    value_columns: tuple
    is_aggregate: bool
    relations: tuple = ()      # tuple[(alias, RelationDecl)]: every RelItem of the statement, any depth
    functions: tuple = ()      # tuple[CreateFunction] of the program


# ------------------------------------------------------------------ generic walking

def same_expr(a, b) -> bool:
    """Equality of resolved expressions regardless of how their columns were qualified."""
    strip = lambda n: replace(n, qualifier=None) if isinstance(n, A.ColumnRef) else n
    return _map(a, strip) == _map(b, strip)


def contains_agg(e) -> bool:
    """Whether e has an aggregate of its own select (not counting those of nested queries)."""
    return any(isinstance(n, A.AggCall) for n in iter_nodes(e, into_queries=False))



def _unordered(q):
    return replace(q, order_by=()) if isinstance(q, A.Select) and q.order_by else q


# ---------------------------------------------------------------------- resolver

class _Resolver(JoinResolution):
    def __init__(self, prog: A.SqlProgram):
        self.relations = {r.name: r for r in prog.relations}
        self.functions = {f.name: f for f in prog.functions}
        self.counter = 0
        self.written_aliases = {n.alias for s in prog.selects for n in iter_nodes(s)
                                if isinstance(n, (A.RelItem, A.SubqueryItem))}
        self.used_aliases: set = set()
        self.target_names: dict = {}     # id(unresolved Select) -> [generated name | None per target]
        self.statement_relations: list = []
        self.visible_relations = set(self.relations)
        self.visible_functions = set(self.functions)

    # ---------------------------------------------------------------- naming
    def number_targets(self, stmt) -> None:
        """Generated target names, numbered in the order target lists end (DIALECT.md §5)."""
        selects = [n for n in iter_nodes(stmt) if isinstance(n, A.Select)]
        for sel in sorted(selects, key=lambda s: s.targets_end):
            names = []
            for t in sel.targets:
                e = t.expr
                has_agg = not isinstance(e, A.Star) and contains_agg(e)
                if isinstance(e, A.Star) or (t.alias is None and isinstance(e, A.ColumnRef)):
                    names.append(None)
                    continue
                if has_agg or t.alias is None:
                    self.counter += 1
                if t.alias is not None:
                    names.append(t.alias)
                elif isinstance(e, A.AggCall):
                    names.append(f"__SQL_{e.func}_AGGREGATE_{self.counter}")
                else:
                    names.append(f"__SQL_EXPRESSION_{self.counter}")
            self.target_names[id(sel)] = names

    def unique_alias(self, written: str) -> str:
        name, n = written, 2
        while name in self.used_aliases or (name != written and name in self.written_aliases):
            name = f"{written}_{n}"
            n += 1
        self.used_aliases.add(name)
        return name

    # --------------------------------------------------------------- queries
    def query(self, q, parent: _Scope | None, nested: bool, top_operand: bool = False):
        """top_operand: q is (inside) an operand of the statement's own set operation."""
        if isinstance(q, A.SetOp):
            if nested and q.limit is not None:
                raise _err(f"LIMIT on a {q.op} in a subquery or in an operand of another set operation (a top-n is "
                           "not a view that deltas maintain; toaster applies it only to a top-level result)",
                           q, UnsupportedError)
            in_top = not nested or top_operand
            left = self.set_operand(q.left, parent, q.op, in_top)
            right = self.set_operand(q.right, parent, q.op, in_top)
            lc, rc = output_columns(left), output_columns(right)
            if len(lc) != len(rc):
                raise _err(f"{q.op} of queries with {len(lc)} and {len(rc)} columns", q)
            for i, ((_, t), (_, u)) in enumerate(zip(lc, rc), start=1):
                if _null_column(left, i - 1) != _null_column(right, i - 1):    # a bare NULL: the other's type
                    left, right = _retyped_null_column(left, i - 1, u), _retyped_null_column(right, i - 1, t)
                    continue
                if _union_type(t, u) is None:
                    raise _err(f"{q.op} column {i}: cannot combine {t} with {u}", q)
            out = replace(q, left=left, right=right)
            # ORDER BY alone does not change which rows a subquery has: dropped there
            order_by = () if nested else tuple(_setop_order_item(o, out) for o in q.order_by)
            return replace(out, order_by=order_by)
        if nested and q.limit is not None:
            raise _err("LIMIT in a subquery", q, UnsupportedError)
        return self.select(q, parent)

    def set_operand(self, side, parent: _Scope | None, op: str, in_top: bool):
        """An operand of a set operation. ORDER BY alone does not change which rows it has:
        dropped. ORDER BY ... LIMIT n keeps the operand's first n rows: a top-n, which summing
        deltas cannot maintain, so it is applied when a top-level result is read (sql_results)."""
        if isinstance(side, A.SetOp):
            return self.query(side, parent, True, top_operand=in_top)
        if side.limit is None:
            return self.query(_unordered(side), parent, True)
        if not in_top:
            raise _err(f"LIMIT on an operand of {op} inside a subquery (a top-n is not a view that deltas "
                       "maintain; toaster applies it only when a top-level result is read)", side, UnsupportedError)
        if not side.order_by:
            raise _err(f"LIMIT without ORDER BY on an operand of {op} (which rows it keeps is arbitrary, "
                       "in DuckDB too, so no maintained view can match it)", side, UnsupportedError)
        r = self.select(side, parent)
        targets = [t.expr for t in r.targets]
        for o in r.order_by:
            if not any(same_expr(o.expr, x) for x in targets):
                raise _err(f"ORDER BY of an operand of {op} with LIMIT must name one of its result columns",
                           o.expr, UnsupportedError)
        return r

    def subquery(self, q, scope: _Scope, what: str, one_column: bool):
        r = self.query(q, scope, True)
        cols = output_columns(r)
        if one_column and len(cols) != 1:
            raise _err(f"{what} must have exactly one column, not {len(cols)}", q)
        return r, cols

    def select(self, sel: A.Select, parent: _Scope | None) -> A.Select:
        sources, items, on_conds, merged = [], [], [], {}
        for item in sel.from_items:
            self.from_item(item, parent, sources, items, on_conds, merged)
        scope = _Scope(sources, parent, merged)
        local = scope.aliases()

        # NATURAL JOIN equalities come resolved; ON conditions see the whole FROM
        conds = [c if done else self.cond(c, scope, "ON") for done, c in on_conds]
        if sel.where is not None:
            conds.append(self.cond(sel.where, scope, "WHERE"))
        flat = []
        for c in conds:
            flat.extend(c.args if isinstance(c, A.And) else [c])
        where = None if not flat else flat[0] if len(flat) == 1 else A.And(tuple(flat), flat[0].pos)

        generated = self.target_names.get(id(sel)) or [None] * len(sel.targets)
        targets = []
        for t, gen in zip(sel.targets, generated):
            if isinstance(t.expr, A.Star):
                targets.extend(self.expand_star(t.expr, scope))
            else:
                e = self.expr(t.expr, scope, None)
                targets.append(A.Target(e, gen or t.expr.name, t.pos))
        names: set = set()
        for i, t in enumerate(targets):
            targets[i] = replace(t, alias=_unique_name(t.alias, names))

        group_by = tuple(self.group_expr(g, scope, targets) for g in sel.group_by)
        having = self.cond(sel.having, scope, None) if sel.having is not None else None
        is_agg = bool(group_by) or having is not None or any(contains_agg(t.expr) for t in targets)
        if having is not None and not group_by and not any(contains_agg(t.expr) for t in targets):
            # the whole input as one group, reported or not: no map holds such a group's count
            pos = getattr(sel.having, "pos", A.NOPOS)
            raise UnsupportedError("HAVING without GROUP BY and without an aggregate in SELECT",
                                   line=pos.line or None, column=pos.column or None)
        if is_agg:
            for t in targets:
                _check_grouped(t.expr, group_by, local)
            if having is not None:
                _check_grouped(having, group_by, local)
        new = replace(sel, targets=tuple(targets), from_items=tuple(items), where=where,
                      group_by=group_by, having=having)
        order_by = tuple(self.order_item(o, scope, new, is_agg) for o in sel.order_by)
        return replace(new, order_by=order_by)

    def group_expr(self, g, scope: _Scope, targets):
        if isinstance(g, A.Literal) and g.type == INT:
            if not 1 <= g.value <= len(targets):
                raise _err(f"GROUP BY position {g.value} is not in the select list", g)
            e = targets[g.value - 1].expr
            if contains_agg(e):
                raise _err(f"GROUP BY position {g.value} refers to an aggregate", g)
            return e
        if isinstance(g, A.ColumnRef) and g.qualifier is None:
            try:
                return scope.lookup(g)
            except SemanticError:
                for t in targets:
                    if t.alias == g.name:
                        if contains_agg(t.expr):
                            raise _err(f"GROUP BY {g.name} refers to an aggregate", g) from None
                        return t.expr
                raise
        return self.expr(g, scope, "GROUP BY")

    def order_item(self, o: A.OrderItem, scope: _Scope, sel: A.Select, is_agg: bool) -> A.OrderItem:
        e = o.expr
        result_exprs = [t.expr for t in sel.targets] + list(sel.group_by if is_agg else ())
        if isinstance(e, A.Literal) and e.type == INT:
            if not 1 <= e.value <= len(sel.targets):
                raise _err(f"ORDER BY position {e.value} is not in the select list", e)
            return replace(o, expr=sel.targets[e.value - 1].expr)
        if isinstance(e, A.ColumnRef) and e.qualifier is None:
            hit = next((t for t in sel.targets if t.alias == e.name), None)
            if hit is not None:
                return replace(o, expr=hit.expr)
        r = self.expr(e, scope, None if is_agg else "ORDER BY of a non-aggregate query")
        if not any(same_expr(r, x) for x in result_exprs):
            raise _err("ORDER BY must name a result column (its alias, position or expression)", e)
        return replace(o, expr=r)

    # ----------------------------------------------------------- expressions
    def expr(self, e, scope: _Scope, no_agg: str | None):
        """Resolve and type an expression. no_agg: None if aggregates are allowed here, else the
        name of the place (for the error message)."""
        match e:
            case A.Literal():
                return e
            case A.NullLiteral():
                return replace(e, type=e.type or INT)
            case A.ColumnRef():
                return scope.lookup(e)
            case A.BinaryOp(op, l, r):
                l2, r2 = _typed_nulls([self.expr(l, scope, no_agg), self.expr(r, scope, no_agg)])
                for side in (l2, r2):
                    if not side.type.is_numeric:
                        raise _err(f"operator {op} needs numbers, got {side.type}", side)
                t = FLOAT if op == "/" else promote(l2.type, r2.type)
                return replace(e, left=l2, right=r2, type=t)
            case A.Negate(arg):
                a2 = self.expr(arg, scope, no_agg)
                if not a2.type.is_numeric:
                    raise _err(f"unary - needs a number, got {a2.type}", a2)
                return replace(e, arg=a2, type=a2.type)
            case A.AggCall(func, args):
                if no_agg is not None:
                    if no_agg.startswith("nested"):
                        raise _err(f"nested aggregate {func} inside {no_agg.split()[1]}", e)
                    raise _err(f"aggregate {func} is not allowed in {no_agg}", e)
                if func == "COUNT" and e.distinct and not args:
                    args = self.every_from_column(e, scope)
                args2 = tuple(self.expr(a, scope, f"nested {func}") for a in args)
                if func in ("SUM", "AVG") and not args2[0].type.is_numeric:
                    raise _err(f"{func} needs a number, got {args2[0].type}", args2[0])
                t = {"COUNT": INT, "AVG": FLOAT}.get(func) or args2[0].type
                return replace(e, args=args2, type=t)
            case A.FuncCall(name, args):
                return self.func_call(e, tuple(self.expr(a, scope, no_agg) for a in args))
            case A.Case(whens, else_):
                values = _typed_nulls([self.expr(v, scope, no_agg) for _, v in whens] +
                                      ([self.expr(else_, scope, no_agg)] if else_ is not None else []))
                whens2 = tuple((self.cond(c, scope, no_agg), v) for (c, _), v in zip(whens, values))
                else2 = values[-1] if else_ is not None else None
                types = [v.type for _, v in whens2] + ([else2.type] if else2 is not None else [])
                if all(t.is_numeric for t in types):
                    t = FLOAT if FLOAT in types else INT
                elif len(set(types)) == 1:
                    t = types[0]
                    if else2 is None:
                        raise _err(f"CASE without ELSE must have numeric results (a missing ELSE is 0), not {t}", e)
                else:
                    raise _err(f"CASE branches have incompatible types {', '.join(sorted(set(map(str, types))))}", e)
                return replace(e, whens=whens2, else_=else2, type=t)
            case A.ScalarSubquery(query):
                # not an aggregate: a single-row lookup, NULL over no rows, an error over
                # several (toaster.calculus.from_sql.Translator.scalar)
                q, cols = self.subquery(query, scope, "a scalar subquery", True)
                return replace(e, query=q, type=cols[0][1])
            case A.Star():
                raise _err("* is only allowed as a whole target or in COUNT(*)", e)
            case A.Unsupported(what):
                raise _err(what, e, UnsupportedError)
        raise _err(f"unexpected expression {type(e).__name__}", e, UnsupportedError)

    def func_call(self, e: A.FuncCall, args: tuple):
        name = e.name
        arg_types = [a.type for a in args]
        decl = self.functions.get(name) if name in self.visible_functions else None
        if decl is not None:
            if len(args) != len(decl.arg_types):
                raise _err(f"function {name.upper()} takes {len(decl.arg_types)} argument(s), got {len(args)}", e)
            for i, (a, want) in enumerate(zip(args, decl.arg_types), start=1):
                if not (a.type == want or (want == FLOAT and a.type == INT)):
                    raise _err(f"argument {i} of {name.upper()} must be {want}, got {a.type}", a)
            return replace(e, args=args, type=decl.return_type)
        if name in ("coalesce", "ifnull", "nullif"):
            return self.null_function(e, tuple(_typed_nulls(list(args))))
        for a in args:
            if isinstance(a, A.NullLiteral):
                raise _err(f"NULL as an argument of {name.upper()} (its type is unknown; CAST a column instead)",
                           a, UnsupportedError)
        b = BUILTINS.get(name)
        if b is None:
            if name in NULL_FUNCTIONS:
                raise _err(f"{name.upper()} (NULLs)", e, UnsupportedError)
            raise _err(f"unknown function {name.upper()}", e)
        if len(args) < b.min_args or (b.max_args is not None and len(args) > b.max_args):
            want = (f"{b.min_args}" if b.min_args == b.max_args
                    else f"at least {b.min_args}" if b.max_args is None else f"{b.min_args}-{b.max_args}")
            raise _err(f"function {name.upper()} takes {want} argument(s), got {len(args)}", e)
        if name == "date_part":
            part = args[0]
            if not (isinstance(part, A.Literal) and part.type == STRING
                    and part.value.lower() in ("year", "month", "day")):
                raise _err("date_part needs 'year', 'month' or 'day' as its first argument", part)
            args = (replace(part, value=part.value.lower()),) + args[1:]
        t = builtin_result_type(name, arg_types)
        if isinstance(t, str):
            raise _err(t, e)
        if name in ("listmin", "listmax") and any(_may_be_null(a) for a in args):
            args = _skipping_nulls(args)
        return replace(e, args=args, type=t)

    def null_function(self, e: A.FuncCall, args: tuple):
        """COALESCE(a, b, ...) (IFNULL is its two-argument form) and NULLIF(a, b), typed as SQL
        types them: the common type of the arguments, NULLIF's as its first."""
        name = "coalesce" if e.name == "ifnull" else e.name
        if (name == "nullif" or e.name == "ifnull") and len(args) != 2 or not args:
            raise _err(f"function {e.name.upper()} takes 2 arguments, got {len(args)}"
                       if name == "nullif" or e.name == "ifnull" else "COALESCE needs arguments", e)
        types = [a.type for a in args]
        for a in args[1:]:
            if not comparable(types[0], a.type):
                raise _err(f"{e.name.upper()} cannot mix {types[0]} and {a.type}", a)
        t = types[0] if name == "nullif" or len(set(types)) == 1 else (FLOAT if FLOAT in types else INT)
        return replace(e, name=name, args=args, type=t)

    def cond(self, c, scope: _Scope, no_agg: str | None):
        match c:
            case A.Comparison(op, l, r):
                l2, r2 = _typed_nulls([self.expr(l, scope, no_agg), self.expr(r, scope, no_agg)])
                if not comparable(l2.type, r2.type):
                    raise _err(f"cannot compare {l2.type} with {r2.type}", c)
                return replace(c, left=l2, right=r2)
            case A.And(args) | A.Or(args):
                return replace(c, args=tuple(self.cond(a, scope, no_agg) for a in args))
            case A.NotCond(arg):
                return replace(c, arg=self.cond(arg, scope, no_agg))
            case A.BoolConst():
                return c
            case A.InQuery(expr, query) | A.Quantified(expr=expr, query=query):
                e2 = self.expr(expr, scope, no_agg)
                what = "a subquery of IN" if isinstance(c, A.InQuery) else f"a subquery of {c.quantifier}"
                q2, cols = self.subquery(query, scope, what, True)
                if not comparable(e2.type, cols[0][1]):
                    raise _err(f"cannot compare {e2.type} with {cols[0][1]}", c)
                return replace(c, expr=e2, query=q2)
            case A.Exists(query):
                q2, _ = self.subquery(query, scope, "EXISTS", False)
                return replace(c, query=q2)
            case A.IsNull(expr):
                return replace(c, expr=self.expr(expr, scope, no_agg))
            case A.Like(expr):
                e2 = self.expr(expr, scope, no_agg)
                if e2.type != STRING:
                    raise _err(f"LIKE needs a string, got {e2.type}", c)
                return replace(c, expr=e2)
        raise _err(f"unexpected condition {type(c).__name__}", c, UnsupportedError)


def _setop_order_item(o: A.OrderItem, q: A.SetOp) -> A.OrderItem:
    """An ORDER BY item of a whole set operation: a position, an output column's name, or (as
    DBToaster reads a trailing ORDER BY) a column that the first or last operand selects there.
    Resolved to ColumnRef(None, name, type) of the output column, as _result's key columns."""
    cols = output_columns(q)
    e = o.expr
    hit = None
    if isinstance(e, A.Literal) and e.type == INT:
        if not 1 <= e.value <= len(cols):
            raise _err(f"ORDER BY position {e.value} is not in the select list", e)
        hit = e.value - 1
    elif isinstance(e, A.ColumnRef) and e.qualifier is None and any(n == e.name for n, _ in cols):
        hit = next(i for i, (n, _) in enumerate(cols) if n == e.name)
    elif isinstance(e, A.ColumnRef):
        for side in (_operand(q, "left"), _operand(q, "right")):
            for i, t in enumerate(side.targets):
                x = t.expr
                if isinstance(x, A.ColumnRef) and x.name == e.name and e.qualifier in (None, x.qualifier, x.source):
                    hit = i if hit is None else hit
    if hit is None:
        raise _err(f"ORDER BY of a {q.op} must name one of its result columns (by name or position)", e)
    name, t = cols[hit]
    return replace(o, expr=A.ColumnRef(None, name, e.pos, None, t))


def _operand(q, side: str) -> A.Select:
    """The first (left) or last (right) SELECT of a set operation."""
    while isinstance(q, A.SetOp):
        q = getattr(q, side)
    return q


def _null_column(q, i: int) -> bool:
    """Whether output column i of the resolved query is the NULL literal in every operand."""
    if isinstance(q, A.SetOp):
        return _null_column(q.left, i) and _null_column(q.right, i)
    return isinstance(q.targets[i].expr, A.NullLiteral)


def _retyped_null_column(q, i: int, t):
    """q with its NULL-literal output column i typed t (a set operation types it as the other side)."""
    if isinstance(q, A.SetOp):
        return replace(q, left=_retyped_null_column(q.left, i, t), right=_retyped_null_column(q.right, i, t))
    target = q.targets[i]
    if not isinstance(target.expr, A.NullLiteral):
        return q
    targets = q.targets[:i] + (replace(target, expr=replace(target.expr, type=t)),) + q.targets[i + 1:]
    return replace(q, targets=targets)


def _typed_nulls(exprs: list) -> list:
    """NULL literals among exprs typed as the others (the first typed one that is not a NULL),
    as SQL types `x + NULL`, `x = NULL`, COALESCE(NULL, x), CASE ... THEN NULL ELSE x."""
    t = next((e.type for e in exprs if not isinstance(e, A.NullLiteral) and e.type is not None), None)
    if t is None:
        return exprs
    return [replace(e, type=t) if isinstance(e, A.NullLiteral) else e for e in exprs]


def _unique_name(name: str, used: set) -> str:
    base, n = name, 2
    while name in used:
        name = f"{base}_{n}"
        n += 1
    used.add(name)
    return name


def _written(ref: A.ColumnRef) -> str:
    return f"{ref.qualifier}.{ref.name}" if ref.qualifier else ref.name


def _is_aggregate(sel: A.Select) -> bool:
    return bool(sel.group_by) or sel.having is not None or any(contains_agg(t.expr) for t in sel.targets)


def _check_grouped(e, group_by: tuple, local: set) -> None:
    """In an aggregate select, outside aggregates only GROUP BY expressions, constants and
    columns of enclosing selects may be used (also inside nested subqueries)."""
    if any(same_expr(e, g) for g in group_by):
        return
    match e:
        case A.AggCall():
            return
        case A.ColumnRef(source=src) if src in local:
            raise _err(f"column {_written(e)} must appear in GROUP BY or inside an aggregate", e)
        case A.Select() | A.SetOp():
            for n in iter_nodes(e):
                if isinstance(n, A.ColumnRef) and n.source in local \
                        and not any(same_expr(n, g) for g in group_by):
                    raise _err(f"column {_written(n)} must appear in GROUP BY or inside an aggregate", n)
            return
    for k in _kids(e):
        _check_grouped(k, group_by, local)


# ---------------------------------------------------------------------- results

@deep("the SQL query (resolve_sql)")
def resolve_program(prog: A.SqlProgram) -> tuple:
    """Resolve every statement of the program; returns tuple[ResolvedQuery]."""
    r = _Resolver(prog)
    several = len(prog.selects) > 1
    out = []
    for i, stmt in enumerate(prog.selects, start=1):
        if prog.declared_before:   # a statement sees only what is declared before it
            nr, nf = prog.declared_before[i - 1]
            r.visible_relations = {d.name for d in prog.relations[:nr]}
            r.visible_functions = {f.name for f in prog.functions[:nf]}
        try:
            _check_nesting(stmt)
            r.number_targets(stmt)
            r.statement_relations = []
            q = r.query(stmt, None, False)
            out.append(_result(q, i, several, tuple(r.statement_relations), tuple(prog.functions)))
        except (SemanticError, UnsupportedError) as e:
            raise e.located(prog.file)
    return tuple(out)


def _result(q, index: int, several: bool, relations: tuple, functions: tuple) -> ResolvedQuery:
    prefix = f"QUERY_{index}_" if several else ""
    used: set = set()
    if isinstance(q, A.SetOp):
        keys = tuple((_unique_name(n, used), A.ColumnRef(None, n, q.pos, None, t)) for n, t in output_columns(q))
        values = ((_unique_name(prefix + "COUNT", used), None),)
        return ResolvedQuery(index, f"QUERY_{index}", q, (), keys, values, False, relations, functions)
    aliases = tuple((it.alias, decl) for it in q.from_items if isinstance(it, A.RelItem)
                    for a, decl in relations if a == it.alias)
    is_agg = _is_aggregate(q)
    keys, values = [], []
    if is_agg:
        for t in q.targets:
            if not contains_agg(t.expr):
                keys.append((_unique_name(t.alias, used), t.expr))
        for i, g in enumerate(q.group_by, start=1):
            if not any(same_expr(g, e) for _, e in keys):
                keys.append((_unique_name(g.name if isinstance(g, A.ColumnRef) else f"__SQL_GROUP_BY_{i}", used), g))
        for t in q.targets:
            if contains_agg(t.expr):
                values.append((_unique_name(prefix + t.alias, used), t.expr))
    else:
        keys = [(_unique_name(t.alias, used), t.expr) for t in q.targets]
        values = [(_unique_name(prefix + "COUNT", used), None)]
    return ResolvedQuery(index, f"QUERY_{index}", q, aliases, tuple(keys), tuple(values), is_agg,
                         relations, functions)


def _may_be_null(e) -> bool:
    """Whether the resolved expression e can be NULL (an over-approximation: it reads a nullable
    column, a scalar subquery, NULL, COALESCE/NULLIF or an aggregate)."""
    return any(isinstance(n, (A.NullLiteral, A.ScalarSubquery, A.AggCall)) or
               isinstance(n, A.ColumnRef) and n.nullable or
               isinstance(n, A.FuncCall) and n.name in ("coalesce", "nullif")
               for n in iter_nodes(e, into_queries=False))


def _skipping_nulls(args: tuple) -> tuple:
    """LISTMIN/LISTMAX arguments that skip NULLs as SQL's LEAST/GREATEST do: argument i becomes
    COALESCE(a_i, a_i+1, ..., a_i-1), so a NULL argument stands for another one and the call is
    NULL only where all of them are (then every COALESCE is, and NULL propagates)."""
    t = FLOAT if any(a.type == FLOAT for a in args) else args[0].type
    return tuple(A.FuncCall("coalesce", args[i:] + args[:i], args[i].pos, t) for i in range(len(args)))
