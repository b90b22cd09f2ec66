"""Delta rules (VLDBJ'14 §3.3; Hot Dog §3 for batches).

delta(Q, event) is an expression equal to Q(D + ΔD) - Q(D) for the event's update:
  single tuple  ±R(t):  ΔR(x1..xn) = ±Π (xi := ti)
  batch of R:           ΔR(x1..xn) = (DELTA R)(x1..xn)
"""
from __future__ import annotations

from toaster.calculus.ir import (AggSum, Cmp, Const, Extremum, relations, DeltaRel, Lift, MapRef, Prod, Rel, Sum, Value, ZERO,
                                 is_zero, mk_prod, mk_sum, neg, all_vars, schema)
from toaster.calculus.maps import Event
from toaster.calculus.nested_delta import NotRangeRestricted, revised_lift_delta
from toaster.errors import UnsupportedError
from toaster.types import INT


def delta(e, event: Event, revised: bool = False, bound=frozenset(), join_domains: bool = False):
    """`revised` applies the range-restricted rule to nested aggregates (nested_delta.py); it
    raises NotRangeRestricted where none exists. `bound`: the variables bound before e is
    evaluated (sideways binding), i.e. a nested aggregate's correlation variables.
    `join_domains`: where an update reaches the correlation only through a join, restrict the
    delta to the values that join yields (nested_delta._join_domain) instead of raising."""
    match e:
        case Rel(n, vs):
            if n != event.relation:
                return ZERO
            if event.kind == "batch":
                return DeltaRel(n, vs)
            lifts = [Lift(v, Value(a)) for v, a in zip(vs, event.args)]
            # the sign belongs to ΔR itself: in ΔR*ΔR (self-joins) two deletions multiply to +
            return mk_prod(([Value(Const(-1, INT))] if event.kind == "delete" else []) + lifts)
        case DeltaRel() | MapRef() | Value() | Cmp():
            return ZERO
        case Sum(ts):
            return mk_sum([delta(t, event, revised, bound, join_domains) for t in ts])
        case Prod(fs):
            return _delta_prod(list(fs), event, revised, frozenset(bound), join_domains)
        case AggSum(gs, q):
            d = delta(q, event, revised, bound, join_domains)
            return ZERO if is_zero(d) else AggSum(gs, d)
        case Extremum(kind, _, _, q):
            if event.relation not in relations(q):
                return ZERO
            if revised:
                raise NotRangeRestricted(f"nested {kind.upper()} has no delta rule")
            raise UnsupportedError(f"incremental maintenance of a nested {kind.upper()} (the calculus "
                                   "evaluator, --backend calc, runs it)")
        case Lift(x, q):
            d = delta(q, event, revised, bound, join_domains)
            if is_zero(d):
                return ZERO
            if revised and relations(q):
                restricted = revised_lift_delta(x, q, d, event, all_vars(q) & set(bound), join_domains)
                return ZERO if restricted is None else restricted
            return mk_sum([Lift(x, mk_sum([q, d])), neg(Lift(x, q))])
    raise TypeError(f"not a calculus expression: {e!r}")


def _delta_prod(fs: list, event: Event, revised: bool, bound: frozenset, join_domains: bool = False):
    """Δ(A*B) = ΔA*B + A*ΔB + ΔA*ΔB, applied to the head and the rest of the product."""
    if len(fs) == 1:
        return delta(fs[0], event, revised, bound, join_domains)
    head, rest = fs[0], fs[1:]
    dh = delta(head, event, revised, bound, join_domains)
    dr = _delta_prod(rest, event, revised, bound | schema(head, bound)[1], join_domains)
    rest_e = mk_prod(rest)
    terms = []
    if not is_zero(dh):
        terms.append(mk_prod([dh, rest_e]))
    if not is_zero(dr):
        terms.append(mk_prod([head, dr]))
    if not is_zero(dh) and not is_zero(dr):
        terms.append(mk_prod([dh, dr]))
    return mk_sum(terms)
