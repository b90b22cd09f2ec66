"""Small helpers shared by the SQL -> calculus lowering (from_sql, null_sql, sql_results)."""
from __future__ import annotations

from toaster.calculus.ir import AggSum, Cmp, Const, Lift, Value, Var, mk_prod, mk_sum, neg
from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.types import INT


def column_var(ref: A.ColumnRef) -> Var:
    return Var(f"{ref.source}_{ref.name}", ref.type)


def _unsupported(what: str, node=None):
    pos = getattr(node, "pos", None)
    return UnsupportedError(what, line=getattr(pos, "line", None) or None,
                            column=getattr(pos, "column", None) or None)


def _is_aggregate(sel: A.Select) -> bool:
    return bool(sel.group_by) or bool(_agg_calls([t.expr for t in sel.targets] + [sel.having]))


def _agg_calls(nodes) -> list:
    """AggCalls in expressions/conditions, outermost only (in order, without duplicates)."""
    out = []

    def walk(n):
        match n:
            case A.AggCall():
                if n not in out:
                    out.append(n)
            case A.BinaryOp(_, l, r) | A.Comparison(_, l, r):
                walk(l)
                walk(r)
            case A.Negate(a) | A.NotCond(a):
                walk(a)
            case A.And(args) | A.Or(args) | A.FuncCall(_, args):
                for a in args:
                    walk(a)
            case A.Case(whens, else_):
                for c, v in whens:
                    walk(c)
                    walk(v)
                walk(else_)
            case A.Like(e) | A.InQuery(e) | A.Quantified(_, e):
                walk(e)
    for n in nodes:
        walk(n)
    return out


def _any(parts: list, fresh=None):
    """OR of 0/1 expressions without output variables. Two: a + b - a*b (inclusion-exclusion).
    More: the count of true disjuncts, lifted and tested nonzero -- linear in the number of
    disjuncts, where folding inclusion-exclusion doubles the expression at every step."""
    if len(parts) > 2 and fresh is not None:
        n = fresh("or", INT)
        # summed out under AggSum([]): a part's own lifts (NULL guards) are not outputs of the sum
        return mk_prod([Lift(n, AggSum((), mk_sum(parts))), Cmp("!=", n, Const(0, INT))])
    acc = parts[0]
    for b in parts[1:]:
        acc = mk_sum([acc, b, neg(mk_prod([acc, b]))])
    return acc


def _rename_outputs(expr, outs, want):
    """expr with output variables `outs` re-exposed as `want` (lifts, projected)."""
    if tuple(outs) == tuple(want):
        return expr
    return AggSum(tuple(want), mk_prod([expr] + [Lift(w, Value(o)) for o, w in zip(outs, want)]))


def output_names(q) -> list:
    """Output column names of a (resolved) query: alias, else column name, else generated."""
    if isinstance(q, A.SetOp):
        return output_names(q.left)
    names = []
    for i, t in enumerate(q.targets, start=1):
        if t.alias:
            names.append(t.alias)
        elif isinstance(t.expr, A.ColumnRef):
            names.append(t.expr.name)
        else:
            names.append(f"__COLUMN_{i}")
    return names
