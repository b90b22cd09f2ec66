"""imp -> imp pass 'imp_fuse_loops': two loops over the same slice of one map become one loop,
and adds into one FLOAT map entry in a row become one add.

A tuple-mode delta whose condition is an OR of disjoint ranges (AXF's `a.PRICE - b.PRICE > 1 OR
b.PRICE - a.PRICE > 1`, toaster/calculus/exclusive.py) is a sum of one loop per disjunct, and a
sum of monomials gives one loop per value factor: AXF's BIDS trigger walks its broker's ask
prices four times, two loops over AXF_mASKS1[b, *] and two over AXF_mASKS2[b, *]. BXA walks all
of PAIRS_mASKS1 twice per event. A later loop over the same map with the same slice moves into
the earlier one (its key and value variables renamed to the earlier loop's), so each slice is
walked once:

    foreach ([b, k_1] -> v_2 in M) { if (k_1 - p > 1.0) { acc_1 = acc_1 + v_2; } }
    ...
    foreach ([b, k_5] -> v_6 in M) { if (p - k_5 > 1.0) { acc_3 = acc_3 + v_6; } }
  ->
    foreach ([b, k_1] -> v_2 in M) { if (k_1 - p > 1.0) { ... } if (p - k_1 > 1.0) { acc_3 = acc_3 + v_2; } }

Taken when the later loop's work can move up past the statements between the two loops and
interleave with the earlier loop's iterations: the bodies are made of If, Assign and MapAdd only;
neither reads a map or local the other (or a statement in between) writes; a map both write is a
FLOAT map only added to and read by neither (float additions commute up to rounding, the order
batch mode changes too; INT maps keep their order: their overflow checks are per addition); the
slice's key expressions read nothing written in between. A `Declare x = literal` between the
loops that only the later loop and what follows it use (the accumulator imp_accumulate_loops
put there) moves before the earlier loop.
"""
from __future__ import annotations

from dataclasses import replace

from toaster.imperative.accumulate import _maps_read
from toaster.imperative.guard import _children, _locals, rewrite_bodies
from toaster.imperative.ir import (Assign, BinOp, Declare, ForEach, If, ImpProgram, Lit, LocalRef, MapAdd, MapClear,
                                   MapGet, MapSet)
from toaster.passes import pass_
from toaster.types import FLOAT
from toaster.m3.range_index import LEVELS_MAP


class _Effects:
    """Maps and locals a statement list reads and writes; `added` = maps written only by MapAdd."""

    def __init__(self, stmts=()):
        self.map_reads, self.map_writes, self.added = set(), set(), set()
        self.local_reads, self.local_writes = set(), set()
        self.simple = True      # only If / Assign / MapAdd (a loop body we can interleave)
        self.visit(stmts)

    def expr(self, e):
        _maps_read(e, self.map_reads)
        self.local_reads |= _locals(e)

    def visit(self, stmts):
        for s in stmts:
            match s:
                case If(c, then, orelse):
                    self.expr(c)
                    self.visit(then + orelse)
                case Assign(v, value):
                    self.expr(value)
                    self.local_writes.add(v.name)
                case Declare(v, init):
                    self.simple = False
                    self.expr(init)
                    self.local_writes.add(v.name)
                case MapAdd(m, keys, value):
                    for k in keys:
                        self.expr(k)
                    self.expr(value)
                    self.map_writes.add(m)
                    self.added.add(m)
                case MapSet(m, keys, value):
                    self.simple = False
                    for k in keys:
                        self.expr(k)
                    self.expr(value)
                    self.map_writes.add(m)
                case MapClear(m):
                    self.simple = False
                    self.map_writes.add(m)
                case ForEach(m, pattern, key_vars, value_var, body):
                    self.simple = False
                    self.map_reads.add(m)
                    for p in pattern:
                        if p is not None:
                            self.expr(p)
                    inner = _Effects(body)
                    bound = {k.name for k in key_vars if k is not None} | {value_var.name}
                    self.map_reads |= inner.map_reads
                    self.map_writes |= inner.map_writes
                    self.added |= inner.added
                    self.local_reads |= inner.local_reads - bound
                    self.local_writes |= inner.local_writes - bound
                case _:
                    self.simple = False
        # a map also written otherwise than by MapAdd is not "only added to"
        return self


def _commute(a: _Effects, b: _Effects, float_maps: set) -> bool:
    """Whether a's and b's statements can run in either order (or interleaved) with one result."""
    if a.map_writes & b.map_reads or b.map_writes & a.map_reads:
        return False
    shared = a.map_writes & b.map_writes
    if any(m not in float_maps or m not in a.added or m not in b.added for m in shared):
        return False
    return not (a.local_writes & (b.local_reads | b.local_writes) or b.local_writes & a.local_reads)


def _rename(e, names: dict):
    """e with the locals named in `names` replaced by their new LocalRefs."""
    if isinstance(e, LocalRef):
        return names.get(e.name, e)
    match e:
        case MapGet(m, keys, t):
            return MapGet(m, tuple(_rename(k, names) for k in keys), t)
    kids = _children(e)
    if not kids:
        return e
    if hasattr(e, "left"):
        return replace(e, left=_rename(e.left, names), right=_rename(e.right, names))
    if isinstance(getattr(e, "args", None), tuple):
        return replace(e, args=tuple(_rename(a, names) for a in e.args))
    return replace(e, arg=_rename(e.arg, names))


def _rename_stmts(stmts, names: dict) -> tuple:
    out = []
    for s in stmts:
        match s:
            case If(c, then, orelse):
                out.append(If(_rename(c, names), _rename_stmts(then, names), _rename_stmts(orelse, names)))
            case Assign(v, value):
                out.append(Assign(names.get(v.name, v), _rename(value, names)))
            case MapAdd(m, keys, value):
                out.append(MapAdd(m, tuple(_rename(k, names) for k in keys), _rename(value, names)))
            case _:
                raise AssertionError(f"imp_fuse_loops: unexpected statement {s!r}")
    return tuple(out)


def _merge_ifs(a: tuple, b: tuple) -> tuple:
    """a + b, with a's last and b's first If joined when they test the same condition and a's
    branches write nothing the condition reads (BXA's two loops test the same price bound)."""
    if a and b and isinstance(a[-1], If) and isinstance(b[0], If) and a[-1].cond == b[0].cond:
        x, y = a[-1], b[0]
        cond = _Effects([If(x.cond, ())])
        done = _Effects(x.then + x.orelse)
        if not (done.local_writes & cond.local_reads or done.map_writes & cond.map_reads):
            return a[:-1] + (If(x.cond, x.then + y.then, x.orelse + y.orelse),) + b[1:]
    return a + b


def _uses(stmts) -> set:
    e = _Effects(stmts)
    return e.local_reads | e.local_writes


class _Fuser:
    def __init__(self, names: set, float_maps: set):
        self.float_maps = float_maps

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            match s:
                case If(c, then, orelse):
                    out.append(If(c, self.block(then), self.block(orelse)))
                case ForEach():
                    out.append(replace(s, body=self.block(s.body)))
                case _:
                    out.append(s)
        changed = True
        while changed:
            changed, out = self._fuse_one(out)
        return _merge_adds(tuple(out), self.float_maps)

    def _fuse_one(self, stmts: list) -> tuple[bool, list]:
        for i, first in enumerate(stmts):
            # a range index's level loop stays one loop per index: llvm replaces each such loop
            # by a masked update (backends/llvm/range_mask.py) only when it writes one index
            if not isinstance(first, ForEach) or first.map == LEVELS_MAP or not _Effects(first.body).simple:
                continue
            for j in range(i + 1, len(stmts)):
                later = stmts[j]
                if not (isinstance(later, ForEach) and later.map == first.map and later.pattern == first.pattern):
                    continue
                fused = self._try(stmts, i, j)
                if fused is not None:
                    return True, fused
        return False, stmts

    def _try(self, stmts: list, i: int, j: int):
        first, later = stmts[i], stmts[j]
        body = _Effects(later.body)
        if not body.simple:
            return None
        # Declares of a literal between the loops that nothing before the later loop uses: hoisted
        between = stmts[i + 1:j]
        hoisted, kept = [], []
        for k, s in enumerate(between):
            rest = between[:k] + between[k + 1:]
            if isinstance(s, Declare) and isinstance(s.init, Lit) and s.var.name not in _uses(rest) \
                    and s.var.name not in _uses([first]):
                hoisted.append(s)
            else:
                kept.append(s)
        mid = _Effects(kept)
        first_body = _Effects(first.body)
        bound = {k.name for k in later.key_vars if k is not None} | {later.value_var.name}
        later_eff = _Effects([later])       # free locals only (its own bound variables excluded)
        if not _commute(later_eff, mid, self.float_maps) or not _commute(body, first_body, self.float_maps):
            return None
        # the slice keys must mean the same at both places
        keys_read = set()
        maps_in_keys = set()
        for p in first.pattern:
            if p is not None:
                keys_read |= _locals(p)
                _maps_read(p, maps_in_keys)
        if keys_read & (mid.local_writes | first_body.local_writes) or maps_in_keys & mid.map_writes:
            return None
        # the later loop's locals must not be captured by the first loop's variables
        first_bound = {k.name for k in first.key_vars if k is not None} | {first.value_var.name}
        if (body.local_reads | body.local_writes) - bound & first_bound:
            return None
        names = {}
        for a, b in zip(later.key_vars, first.key_vars):
            if a is not None:
                names[a.name] = b
        names[later.value_var.name] = first.value_var
        fused = replace(first, body=_merge_ifs(first.body, _rename_stmts(later.body, names)))
        return stmts[:i] + hoisted + [fused] + kept + stmts[j + 1:]


def _merge_adds(stmts: tuple, float_maps: set) -> tuple:
    """`M[k] += a; ...; M[k] += b` -> `...; M[k] += a + b` for a FLOAT map M when the statements
    between neither read nor write M nor write what `M[k] += a` reads (AXF's four accumulators,
    SPREAD's two EXPOSURE terms: one upsert, and one undo record, instead of several)."""
    out = list(stmts)
    i = 0
    while i < len(out):
        s = out[i]
        if isinstance(s, MapAdd) and s.map in float_maps:
            reads = _Effects([s])
            for j in range(i + 1, len(out)):
                t = out[j]
                if isinstance(t, MapAdd) and t.map == s.map and t.keys == s.keys \
                        and s.map not in _maps_read(t.value, set()):
                    out[j] = MapAdd(s.map, s.keys, BinOp("+", s.value, t.value, FLOAT))
                    del out[i]
                    i -= 1
                    break
                e = _Effects([t])
                if s.map in e.map_reads | e.map_writes or e.local_writes & reads.local_reads \
                        or e.map_writes & reads.map_reads:
                    break
        i += 1
    return tuple(out)


@pass_("imp_fuse_loops", "imp", "imp")
def imp_fuse_loops(program: ImpProgram, options=None) -> ImpProgram:
    """Two loops over the same slice of one map, whose work commutes with what lies between, run as one loop."""
    float_maps = {m.name for m in program.maps if m.value_type == FLOAT}
    return rewrite_bodies(program, lambda names: _Fuser(names, float_maps))
