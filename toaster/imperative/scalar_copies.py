"""imp -> imp pass 'imp_scalar_copies': a value computed into a scalar temp map only to be copied
into a scalar map is set into that map directly.

A tuple-mode re-evaluation `V[] := e` (PSP's closed sums, and PSP itself) lowers to

    clear(TMP);  ...  TMP[] += e;  clear(V);  foreach ([] -> v in TMP) { V[] += v; }

a store and a load of TMP and a test of its value per event, three times per PSP event. It
becomes `V[] := e;` (MapSet, in place of the add into TMP). Taken when TMP is a temp map with
no key that the trigger touches only there (its clear earlier in the same block, that one add,
that loop, whose body is only the copy), V has no key and TMP's value type, and e does not read
V. Exact: TMP held 0 + e and V gets it (a zero TMP copies nothing into the cleared V: V is 0
either way; NaN is copied as before); the undo log records V's old value once, as clear did.
Temp maps no statement uses any more are dropped from the program.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace

from toaster.imperative.accumulate import _maps_read
from toaster.imperative.ir import ForEach, If, ImpProgram, LocalRef, MapAdd, MapClear, MapSet
from toaster.passes import pass_


def _map_uses(node, out: Counter) -> Counter:
    """How many statements and reads of `node` name each map."""
    if isinstance(node, (tuple, list)):
        for x in node:
            _map_uses(x, out)
    elif hasattr(node, "__dataclass_fields__"):
        if isinstance(getattr(node, "map", None), str):
            out[node.map] += 1
        for f in fields(node):
            _map_uses(getattr(node, f.name), out)
    return out


class _Copies:
    def __init__(self, specs: dict, uses: Counter):
        self.specs, self.uses = specs, uses

    def _scalar(self, name, kind=None) -> bool:
        spec = self.specs.get(name)
        return spec is not None and not spec.key_types and (kind is None or spec.kind == kind)

    def copy_at(self, stmts, j):
        """The scalar map V when stmts[j:j+3] is `TMP[] += e; clear(V); foreach TMP { V[] += v }`."""
        add = stmts[j]
        if not (isinstance(add, MapAdd) and not add.keys and self._scalar(add.map, "temp")) or j + 2 >= len(stmts):
            return None
        clear, loop = stmts[j + 1], stmts[j + 2]
        if not (isinstance(clear, MapClear) and isinstance(loop, ForEach) and loop.map == add.map and not loop.pattern):
            return None
        v = clear.map
        if loop.body != (MapAdd(v, (), LocalRef(loop.value_var.name, loop.value_var.type)),) or v == add.map:
            return None
        if not self._scalar(v) or self.specs[v].value_type != self.specs[add.map].value_type:
            return None
        if v in _maps_read(add.value, set()) or self.uses[add.map] != 3 \
                or MapClear(add.map) not in stmts[:j]:
            return None
        return v

    def block(self, stmts) -> tuple:
        stmts = [replace(s, then=self.block(s.then), orelse=self.block(s.orelse)) if isinstance(s, If) else s
                 for s in stmts]
        out, j = [], 0
        while j < len(stmts):
            v = self.copy_at(stmts, j)
            if v is None:
                out.append(stmts[j])
                j += 1
                continue
            tmp = stmts[j].map
            out = [s for s in out if s != MapClear(tmp)]
            out.append(MapSet(v, (), stmts[j].value))
            j += 3
        return tuple(out)


@pass_("imp_scalar_copies", "imp", "imp")
def imp_scalar_copies(program: ImpProgram, options=None) -> ImpProgram:
    """A scalar temp map written once and copied into a scalar map becomes a set of that map."""
    specs = {m.name: m for m in program.maps}
    triggers = tuple(replace(t, body=_Copies(specs, _map_uses(t.body, Counter())).block(t.body))
                     for t in program.triggers)
    used = _map_uses(triggers, Counter())
    maps = tuple(m for m in program.maps if m.kind != "temp" or used[m.name])
    return replace(program, triggers=triggers, maps=maps)
