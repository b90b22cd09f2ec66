"""Where SQL's NULL can arise (issue 12): nullable columns and empty scalar subqueries.

A column declared `NULL` is NULL where its null flag is 1 (toaster.schema.Column). A scalar
subquery over no rows is NULL unless its value is a COUNT: `(SELECT SUM(C) FROM S WHERE S.B =
R.B)` with no matching row is NULL. Anything computed from a NULL by arithmetic or a function is
NULL; a comparison with NULL is unknown (the row is dropped, and NOT keeps it dropped).
toaster represents "e is not NULL" by guards (toaster.calculus.from_sql.null_guards): a column's
flag is 0, a subquery's lifted row count is nonzero. A column of a FROM subquery or set-operation
operand that can be NULL (nullable_outputs) is a nullable column of the derived relation. A NULL
that would reach a place without NULL support yet (a subquery's NULL in a CASE value) is refused
(`not supported yet`). A cast that can fail ('' is no date) is never evaluated on the placeholder
a NULL holds (toaster.calculus.ir.guards_first).
"""
from __future__ import annotations

from toaster.errors import UnsupportedError
from toaster.frontend import ast as A

NULL_AGGREGATES = ("SUM", "AVG", "MIN", "MAX")   # NULL over no rows; COUNT is 0


def refuse_null(what: str, node):
    pos = getattr(node, "pos", None)
    why = "a nullable column" if "nullable column" in what else "the NULL literal" if what.startswith("NULL ") \
        else "a scalar subquery that can be empty"
    return UnsupportedError(f"{what} ({why} is NULL there)",
                            line=getattr(pos, "line", None) or None, column=getattr(pos, "column", None) or None)


def is_nullable(query) -> bool:
    """Whether the scalar subquery `query` (resolved) is NULL when it has no rows."""
    if not isinstance(query, A.Select):
        return True
    if not _is_aggregate(query):
        if is_single_row(query):           # SELECT <expr>: NULL only if the expression is
            return bool(nullable_subqueries(query.targets[0].expr))
        return True                        # a single-row lookup: NULL over no rows
    return bool(null_aggregates(query.targets[0].expr)) or bool(nullable_subqueries(query.targets[0].expr))


def is_single_row(query) -> bool:
    """A SELECT without FROM and WHERE: exactly one row."""
    return isinstance(query, A.Select) and not query.from_items and query.where is None \
        and not _is_aggregate(query)


def null_aggregates(e) -> list:
    """The outermost SUM/AVG/MIN/MAX calls of e (an expression over aggregates) that make e NULL
    over no rows; refused where such a call is a CASE value."""
    def null_aggregate(n, where):
        if isinstance(n, A.AggCall) and n.func in NULL_AGGREGATES:
            return f"{n.func} over no rows inside a CASE" if where == "case" else ""
        return None
    return _null_sources(e, null_aggregate)


def nullable_subqueries(e, aggs=None) -> list:
    """The NULL sources whose NULL makes the value e NULL: nullable ScalarSubquery nodes and
    nullable ColumnRefs, reached through arithmetic and function arguments, outside aggregates
    of e's own query (their arguments are guarded where they are computed) and outside nested
    queries. Refused: a nullable subquery inside a CASE value; CASE conditions are conditions
    (guarded where they are translated)."""
    def nullable_subquery(n, where):
        if isinstance(n, A.NullLiteral):
            return ""
        if isinstance(n, A.ScalarSubquery) and is_nullable(n.query):
            return ""
        if isinstance(n, A.ColumnRef) and n.nullable:
            if where == "case":
                return f"the nullable column {n.name} inside a CASE value"
            return ""
        return None
    return _null_sources(e, nullable_subquery, skip=aggs)


def _null_sources(e, source, skip=None) -> list:
    """The nodes of e for which source(node, where) is not None, reached through arithmetic
    ("arith"), function arguments (the function's name) and CASE values ("case"); a nonempty
    answer names a NULL source refused there."""
    out: list = []

    def walk(n, where: str):
        if skip is not None and n in skip and not (isinstance(n, A.ColumnRef) and n.nullable):
            if null_key(n) in skip:      # an aggregate or group key that can be NULL there
                if where == "case":
                    raise refuse_null("an aggregate or group key over a nullable column inside a CASE value", n)
                if n not in out:
                    out.append(n)
            return
        what = source(n, where)
        if what is not None:
            if what:
                raise refuse_null(what, n)
            if n not in out:
                out.append(n)
            return
        match n:
            case A.BinaryOp(_, l, r):
                walk(l, where)
                walk(r, where)
            case A.Negate(a):
                walk(a, where)
            case A.FuncCall("coalesce" | "nullif", args):
                # COALESCE is NULL only if every argument is; NULLIF(a, b) wherever a is or a = b
                kinds = [bool(_null_sources(a, source, skip)) for a in args]
                if all(kinds) or n.name == "nullif":
                    if where == "case":
                        raise refuse_null(f"{n.name.upper()} that can be NULL inside a CASE value", n)
                    if n not in out:
                        out.append(n)
            case A.FuncCall(name, args):
                for a in args:
                    walk(a, "case" if where == "case" else name)
            case A.Case(whens, else_):
                # the CASE is NULL where the value it takes is: a nullable column or COALESCE in
                # a value makes the whole CASE one NULL source (a scalar subquery there is refused)
                def in_value(m, w):
                    return source(m, "case" if isinstance(m, A.ScalarSubquery) else w)
                values = [v for _, v in whens] + ([else_] if else_ is not None else [])
                if any(_null_sources(v, in_value, skip) for v in values):
                    if n not in out:
                        out.append(n)
    walk(e, "arith")
    return out


def null_key(node) -> tuple:
    """The key under which a translator's `aggs` (aggregate calls and group expressions -> their
    values) says that node can be NULL there, and how to guard it (toaster.calculus.null_sql)."""
    return ("null", node)


def null_capable(call) -> bool:
    """Whether the aggregate call is NULL when its group has no non-NULL argument: SUM / AVG /
    MIN / MAX of an argument that can be NULL (over no rows at all toaster's SUM is 0, DIALECT.md)."""
    return call.func in NULL_AGGREGATES and any(nullable_subqueries(a) for a in call.args)


def aggregate_skips(sel) -> dict:
    """For an aggregate select: its aggregate calls and group expressions (computed apart, so
    the NULL sources inside them are not the targets' own), those that can be NULL marked by
    null_key -- the frontend's view of the `aggs` a translator passes to nullable_subqueries."""
    from toaster.frontend.traverse import iter_nodes
    skip: dict = {}
    exprs = [t.expr for t in sel.targets] + ([sel.having] if sel.having is not None else [])
    for e in exprs:
        for n in iter_nodes(e, into_queries=False):
            if isinstance(n, A.AggCall):
                skip[n] = True
                if null_capable(n):
                    skip[null_key(n)] = True
    for g in sel.group_by:
        skip[g] = True
        if nullable_subqueries(g):
            skip[null_key(g)] = True
    return skip


def nullable_outputs(q) -> tuple:
    """Per output column of a resolved query (a FROM subquery, a set-operation operand): whether
    it can be NULL. Such a column is carried with a null flag, as a nullable base column is."""
    if isinstance(q, A.SetOp):
        return tuple(a or b for a, b in zip(nullable_outputs(q.left), nullable_outputs(q.right)))
    skip = aggregate_skips(q) if _is_aggregate(q) else None
    return tuple(bool(nullable_subqueries(t.expr, skip)) for t in q.targets)


def condition_is_nullable(c, aggs=None) -> bool:
    """Whether condition c can be unknown (it compares a value that can be NULL)."""
    match c:
        case A.Comparison(_, l, r):
            return bool(nullable_subqueries(l, aggs) or nullable_subqueries(r, aggs))
        case A.And(args) | A.Or(args):
            return any(condition_is_nullable(a, aggs) for a in args)
        case A.NotCond(a):
            return condition_is_nullable(a, aggs)
        case A.InQuery(e, q) | A.Quantified(expr=e, query=q):
            # x IN (SELECT s ...) is unknown where no s equals x and some s is NULL
            return bool(nullable_subqueries(e, aggs)) or any(nullable_outputs(q))
        case A.Like(e):
            return bool(nullable_subqueries(e, aggs))
    return False


def _is_aggregate(sel: A.Select) -> bool:
    from toaster.frontend.resolve import contains_agg
    return bool(sel.group_by) or sel.having is not None or any(contains_agg(t.expr) for t in sel.targets)
