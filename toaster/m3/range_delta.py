"""Ordered indexes on delta loops (part of pass 'm3_range_index'): an inequality join's delta.

BXA's delta per BIDS event loops over every entry of the ask-side map, keyed (broker, price),
under an inequality with the event's price, and adds each match into the view at the loop's
broker:

    PAIRS[bids_broker, A_BROKER] += AggSum([A_BROKER], M[A_BROKER, A_PRICE] * {bids_price >= A_PRICE - 0.05})

The set of prices that hold is an interval of keys whose ends depend only on the event
(`rix_span`: the condition is `f(X) op a` with f(X) = X + d, X - d or d - X, d and a of the event,
searched exactly as IEEE rounds f, or `X op a`: `rix_cut`). So the sum is, per group (A_BROKER,
enumerated by the group count map the VWAP sites use), one `rix_interval` of M's ordered index:
per event ~10 brokers x O(log U) instead of ~1,300 entries, and one upsert per group instead of
one per match. Interval sums need no monotone sums: no fallback.

Applied by default only where the loop enumerates groups (a key of M is neither the event's nor
the summed one): AXF's loops run over one broker's ~150 prices (its group is the event's), where
an index's upkeep (a level loop per update of each of four maps) costs more than the loop saves;
the option `deltas=all` indexes those too.
"""
from __future__ import annotations

from toaster.calculus.ir import (INT, AggSum, Arith, Cmp, Const, Func, Lift, MapRef, Prod, Value, Var,
                                 all_vars, term_vars)
from toaster.ordered_index import KEY_NEG_INF, KEY_POS_INF, REL_CODES, span_code
from toaster.types import DATE, FLOAT

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


class DeltaSite:
    """One matched delta AggSum: the outer map, its summed key X, per-group factors, conditions."""

    def __init__(self, group, outer, x, plain, conds):
        self.group, self.outer, self.x = group, outer, x
        self.plain = plain          # factors free of X (event values, group values, constants)
        self.conds = conds          # [(op, a, form, d)]: f(X) op a, form None for X itself


def match_delta(e, args: set, factors, everywhere: bool):
    """A DeltaSite if e is AggSum(G, M[..] * conditions on X * factors free of X), else None."""
    if not isinstance(e, AggSum):
        return None
    fs = factors(e.expr)
    refs = [f for f in fs if isinstance(f, MapRef)]
    if len(refs) != 1 or not all(isinstance(f, (MapRef, Cmp, Value)) for f in fs):
        return None
    outer = refs[0]
    if len(set(outer.vars)) != len(outer.vars) or not set(e.group) <= set(outer.vars) - args:
        return None
    free = [v for v in outer.vars if v not in args and v not in e.group]
    if len(free) != 1 or free[0].type not in (FLOAT, DATE, INT):
        return None
    x = free[0]
    if not everywhere and not e.group:
        return None                 # a loop over one group's keys (AXF): left alone by default
    allowed = args | set(e.group)
    plain, conds = [], []
    for f in fs:
        if f is outer:
            continue
        if x not in all_vars(f):
            if not all_vars(f) <= allowed:
                return None
            plain.append(f)
            continue
        c = _condition(f, x, args) if isinstance(f, Cmp) else None
        if c is None:
            return None
        conds.append(c)
    return DeltaSite(tuple(e.group), outer, x, plain, conds) if conds else None


def _condition(c: Cmp, x, args: set):
    for k, op, a in ((c.left, c.op, c.right), (c.right, _FLIP.get(c.op), c.left)):
        if op not in _FLIP or not term_vars(a) <= args:
            continue
        if k == x:
            a = _as(a, x.type)
            return None if a is None else (op, a, None, None)
        if x.type != FLOAT or not isinstance(k, Arith) or len(k.args) != 2 or k.type != FLOAT:
            continue
        left, right = k.args
        form = {("+", True): 0, ("-", True): 1, ("-", False): 2, ("+", False): 0}.get((k.op, left == x))
        d = right if left == x else left if right == x else None
        if form is None or d is None or not term_vars(d) <= args:
            continue
        a, d = _as(a, FLOAT), _as(d, FLOAT)
        if a is not None and d is not None:
            return op, a, form, d
    return None


def _as(a, t):
    """a as a term of type t (an int constant becomes an exact float), or None."""
    if a.type == t:
        return a
    if t == FLOAT and isinstance(a, Const) and a.type == INT and abs(a.value) <= 2 ** 53:
        return Const(float(a.value), FLOAT)
    return None


def delta_terms(site: DeltaSite, bound):
    """The bounds of the site's conditions as hoisted lifts (`bound(fn, k)`) and the lo / hi key
    variables they give: [(lifts, lows, highs)]."""
    fast, lows, highs = [], [], []
    for k, (op, a, form, d) in enumerate(site.conds):
        if form is None:
            fast.append(bound(Func("rix_cut", (Const(REL_CODES[op], INT), a), INT), 2 * k))
            (lows if op in (">", ">=") else highs).append(fast[-1].var)
            continue
        for end, side in ((0, lows), (1, highs)):
            fast.append(bound(Func("rix_span", (Const(span_code(op, form, end), INT), a, d), INT), 2 * k + end))
            side.append(fast[-1].var)
    if site.x.type == FLOAT:        # NaN keys lie beyond the infinities: never in a range
        lows.append(Const(KEY_NEG_INF, INT))
        highs.append(Const(KEY_POS_INF, INT))
    return fast, lows, highs


def delta_sum(site: DeltaSite, oidx_name, gd_name, lo, hi, gvars):
    """The per-group interval sum, upserted only where it is not 0 (no dead entries)."""
    v = Var("__rix_v", site.outer.type)
    body = []
    if gd_name is not None:
        n = Var("__rix_g", INT)
        body += [Lift(n, MapRef(gd_name, gvars, INT)), Cmp("!=", n, Const(0, INT))]
    body += [Lift(v, Value(Func("rix_interval", (oidx_name, lo, hi) + gvars, site.outer.type))),
             Cmp("!=", v, Const(0, INT)), Value(v)]
    return body


__all__ = ["DeltaSite", "match_delta", "delta_terms", "delta_sum"]
