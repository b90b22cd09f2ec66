"""imp -> imp pass 'imp_accumulate_loops': a loop adding into one map entry adds into a local.

A tuple-mode delta correlated by an inequality with the event (AXF's `|a.PRICE - b.PRICE| > 1`
per broker) lowers to a slice loop whose every matching entry upserts the same view entry:

    foreach ([bids_broker_id, k] -> v in AXF_mASKS1) { if (k - bids_price > 1.0) { AXF[bids_broker_id] += v; } }

one hash upsert (and undo record) per match, ~75 per loop and 6 loops per AXF event. The loop
now sums into a local and the entry is upserted once after it:

    float acc_1 = 0.0;
    foreach (...) { if (...) { acc_1 = acc_1 + v; } }
    AXF[bids_broker_id] += acc_1;

Taken when the loop's body is only If and MapAdd statements, every MapAdd writes the same FLOAT
map at the same keys, the keys read no variable the loop binds, and the loop reads neither that
map nor iterates it. Exact up to the order of float additions (the entry gets the sum of the
same values, added first among themselves); adding 0 changes no map (a key with value 0 is not
stored), so a loop without a match still changes nothing. INT targets are left as they are (their
overflow checks are per addition).
"""
from __future__ import annotations

from dataclasses import replace

from toaster.imperative.guard import FreshLocals, _children, _locals, _writes, rewrite_bodies
from toaster.imperative.ir import Assign, BinOp, Declare, ForEach, If, ImpProgram, Lit, LocalRef, MapAdd, MapGet
from toaster.passes import pass_
from toaster.types import FLOAT


def _maps_read(e, out: set) -> set:
    if isinstance(e, MapGet):
        out.add(e.map)
    for c in _children(e):
        _maps_read(c, out)
    return out


def _reads_in(stmts, out: set) -> set:
    for s in stmts:
        match s:
            case If(c, then, orelse):
                _maps_read(c, out)
                _reads_in(then + orelse, out)
            case MapAdd(_, keys, v):
                for k in keys:
                    _maps_read(k, out)
                _maps_read(v, out)
    return out


def _accumulate(stmts, acc: LocalRef) -> tuple:
    out = []
    for s in stmts:
        match s:
            case If(c, then, orelse):
                out.append(If(c, _accumulate(then, acc), _accumulate(orelse, acc)))
            case MapAdd(_, _, v):
                out.append(Assign(acc, BinOp("+", acc, v, FLOAT)))
    return tuple(out)


class _Accumulator(FreshLocals):
    def __init__(self, names: set, types: dict):
        super().__init__(names, "acc_loop_")
        self.types = types

    def target(self, loop: ForEach):
        """(map, keys) every write of the loop adds to, when the loop can sum into a local."""
        writes = _writes(loop.body)
        if not writes:
            return None
        m, keys = writes[0].map, writes[0].keys
        if any(w.map != m or w.keys != keys for w in writes) or self.types.get(m) != FLOAT or m == loop.map:
            return None
        bound = {k.name for k in loop.key_vars if k is not None} | {loop.value_var.name}
        if any(_locals(k) & bound for k in keys) or m in _reads_in(loop.body, set()):
            return None
        return m, keys

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            match s:
                case If(c, then, orelse):
                    out.append(If(c, self.block(then), self.block(orelse)))
                case ForEach():
                    s = replace(s, body=self.block(s.body))
                    found = self.target(s)
                    if found is None:
                        out.append(s)
                        continue
                    acc = LocalRef(self.fresh(), FLOAT)
                    out += [Declare(acc, Lit(0.0, FLOAT)), replace(s, body=_accumulate(s.body, acc)),
                            MapAdd(found[0], found[1], acc)]
                case _:
                    out.append(s)
        return tuple(out)


@pass_("imp_accumulate_loops", "imp", "imp")
def imp_accumulate_loops(program: ImpProgram, options=None) -> ImpProgram:
    """A loop whose every write adds into one FLOAT map entry sums into a local, upserted once after it."""
    types = {m.name: m.value_type for m in program.maps}
    return rewrite_bodies(program, lambda names: _Accumulator(names, types))
