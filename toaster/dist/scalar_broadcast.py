"""One-row driver parts Broadcast to the views they join (docs/spark-engine.md, "Q22 in one job").

A term of a statement whose driver-side part is one row whatever the data (lifts of keyless
driver views: TPC-H Q22's AVG(C_ACCTBAL) and count of customers) would, next to a partitioned
view, make placement Gather the whole view to the driver. Broadcasting the row instead costs one
record per partition (m3_to_dist{scalar_broadcast}); a nested aggregate that reads the batch at
the view's partition key (Q22's order count per customer, old plus the batch's) then runs on the
workers with the batch's aggregate per key Scattered there (scatter_batch_sums).
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.calculus.simplify import subst
from toaster.dist.ir import Scatter


def _outputs(e) -> set:
    return C.schema(e, set())[1]


def one_row(factors) -> bool:
    """Whether a driver-side product is one row whatever the data: lifts of closed scalars
    (keyless driver views, global aggregates) and values. Broadcasting it costs one record per
    partition, so it joins a partitioned map where the map lies (TPC-H Q22's AVG(C_ACCTBAL) next
    to the customers) instead of the map being Gathered whole to the driver."""
    for f in factors:
        if isinstance(f, C.Lift):
            if _outputs(f.expr):
                return False
        elif any(isinstance(n, (C.MapRef, C.DeltaRel, C.Rel)) for n in C.subterms(f)) or _outputs(f):
            return False
    return bool(factors)


def reads_batch(e) -> bool:
    return any(isinstance(n, C.DeltaRel) for n in C.subterms(e))


def scatter_batch_sums(e, tag):
    """e with every sum over the batch alone, AggSum(gs, Q), Q reading the partition variables
    bound outside, pre-aggregated per partition key and Scattered there:
    AggSum(gs, Scatter(parts, AggSum(gs + parts, Q))), the same value at the bound key. Only
    the batch's aggregate per key travels (TPC-H Q22: the batch's order count per customer)."""
    match e:
        case C.AggSum(gs, q) if reads_batch(q) and not any(isinstance(n, (C.MapRef, C.Rel)) for n in C.subterms(q)) \
                and set(tag.parts) <= {v for n in C.subterms(q) if isinstance(n, C.DeltaRel) for v in n.vars}:
            keys = tuple(gs) + tuple(p for p in tag.parts if p not in gs)
            # the batch's other columns renamed apart: summed out here, they are no column any
            # other occurrence of the batch in the statement needs (its own temp stays per key)
            inner = {v: C.Var(f"{v.name}__s", v.type) for v in _outputs(q) - set(keys)}
            moved = C.AggSum(keys, subst(q, inner))
            return None if C.schema(moved, set())[0] else C.AggSum(gs, Scatter(tag.parts, moved))
        case C.DeltaRel():
            return None              # not under a sum the rewrite can move: no plan
        case C.Prod(fs) | C.Sum(fs):
            new = [scatter_batch_sums(f, tag) for f in fs]
            return None if None in new else type(e)(tuple(new))
        case C.AggSum(gs, q):
            q = scatter_batch_sums(q, tag)
            return None if q is None else C.AggSum(gs, q)
        case C.Lift(v, q):
            q = scatter_batch_sums(q, tag)
            return None if q is None else C.Lift(v, q)
    return e
