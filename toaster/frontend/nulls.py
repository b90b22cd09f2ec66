"""Where SQL's NULL of an empty scalar subquery can arise (issue 12).

A scalar subquery over no rows is NULL unless its value is a COUNT: `(SELECT SUM(C) FROM S
WHERE S.B = R.B)` with no matching row is NULL, and so is anything computed from it by
arithmetic; a comparison with NULL is unknown (the row is dropped, and NOT keeps it dropped).
toaster represents that NULL by a guard: a lifted count of the subquery's rows that must be
nonzero (toaster.calculus.from_sql). Results have no NULL yet, so a NULL that would reach a
key column, a function argument or a CASE value is refused (`not supported yet`).
"""
from __future__ import annotations

from toaster.errors import UnsupportedError
from toaster.frontend import ast as A

NULL_AGGREGATES = ("SUM", "AVG", "MIN", "MAX")   # NULL over no rows; COUNT is 0


def refuse_null(what: str, node):
    pos = getattr(node, "pos", None)
    return UnsupportedError(f"{what} (a scalar subquery that can be empty is NULL there)",
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
    over no rows; refused where such a call is a function argument or a CASE value."""
    def null_aggregate(n):
        if isinstance(n, A.AggCall) and n.func in NULL_AGGREGATES:
            return f"{n.func} over no rows inside a function or CASE"
        return None
    return _null_sources(e, null_aggregate)


def nullable_subqueries(e, aggs=None) -> list:
    """The nullable ScalarSubquery nodes whose NULL makes the value e NULL (through arithmetic),
    outside aggregates of e's own query (their arguments are guarded where they are computed)
    and outside nested queries. A nullable subquery inside a function argument or a CASE value
    is refused; CASE conditions are conditions (guarded where they are translated)."""
    def nullable_subquery(n):
        if isinstance(n, A.ScalarSubquery) and is_nullable(n.query):
            return "a scalar subquery that can be empty inside a function argument or a CASE value"
        return None
    return _null_sources(e, nullable_subquery, skip=aggs)


def _null_sources(e, source, skip=None) -> list:
    """The nodes of e for which source(node) names a NULL source, reached through arithmetic
    only; one met inside a function argument or a CASE value is refused with that name."""
    out: list = []

    def walk(n, strict: bool):
        if skip is not None and n in skip:
            return
        what = source(n)
        if what is not None:
            if not strict:
                raise refuse_null(what, n)
            if n not in out:
                out.append(n)
            return
        match n:
            case A.BinaryOp(_, l, r):
                walk(l, strict)
                walk(r, strict)
            case A.Negate(a):
                walk(a, strict)
            case A.FuncCall(_, args):
                for a in args:
                    walk(a, False)
            case A.Case(whens, else_):
                for _, v in whens:
                    walk(v, False)
                if else_ is not None:
                    walk(else_, False)
    walk(e, True)
    return out


def condition_is_nullable(c, aggs=None) -> bool:
    """Whether condition c can be unknown (it compares a value that can be NULL)."""
    match c:
        case A.Comparison(_, l, r):
            return bool(nullable_subqueries(l, aggs) or nullable_subqueries(r, aggs))
        case A.And(args) | A.Or(args):
            return any(condition_is_nullable(a, aggs) for a in args)
        case A.NotCond(a):
            return condition_is_nullable(a, aggs)
        case A.InQuery(e) | A.Quantified(expr=e) | A.Like(e):
            return bool(nullable_subqueries(e, aggs))
    return False


def _is_aggregate(sel: A.Select) -> bool:
    from toaster.frontend.resolve import contains_agg
    return bool(sel.group_by) or sel.having is not None or any(contains_agg(t.expr) for t in sel.targets)
