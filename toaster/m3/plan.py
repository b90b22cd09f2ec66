"""The materialization plan: what the HO-IVM compiler decided, as its own printable IR (DBToaster
a5's `-l plan`). Derived from an M3 program: per map, its definition and, per updated relation,
whether the map is maintained incrementally (`+=`) or re-evaluated (`:=`), the maps that
maintenance reads, and the compiler's decisions once each.

    python -m toaster.pipeline Q.sql --dump-ir plan
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus.printer import print_expr
from toaster.m3.hoivm import _maps_read


@dataclass(frozen=True)
class Maintenance:
    relation: str        # '' for ON SYSTEM READY
    how: str             # 'incremental' | 're-evaluated' | 'initial value'
    reads: tuple         # names of the maps the statements read


@dataclass(frozen=True)
class MapPlan:
    name: str
    keys: tuple
    type: object
    role: str
    definition: object
    maintenance: tuple   # tuple[Maintenance, ...]


@dataclass(frozen=True)
class MaterializationPlan:
    mode: str
    maps: tuple          # tuple[MapPlan, ...]
    decisions: tuple     # tuple[str, ...], each once, in the order the compiler took them

    def __str__(self) -> str:
        return print_plan(self)


def materialization_plan(m3) -> MaterializationPlan:
    per_map: dict[str, dict[str, tuple[set, set]]] = {m.name: {} for m in m3.maps}
    for t in m3.triggers:
        rel = t.event.relation if t.event.kind != "ready" else ""
        for s in t.statements:
            hows, reads = per_map.setdefault(s.target, {}).setdefault(rel, (set(), set()))
            hows.add("initial value" if not rel else "incremental" if s.op == "+=" else "re-evaluated")
            reads |= _maps_read(s.rhs) - {s.target}
    maps = []
    for m in m3.maps:
        maint = tuple(Maintenance(rel, " and ".join(sorted(hows)), tuple(sorted(reads)))
                      for rel, (hows, reads) in per_map.get(m.name, {}).items())
        maps.append(MapPlan(m.name, tuple(m.keys), m.type, m.role, m.definition, maint))
    return MaterializationPlan(m3.mode, tuple(maps), tuple(dict.fromkeys(m3.notes)))


def print_plan(plan: MaterializationPlan) -> str:
    out = [f"-- materialization plan (mode: {plan.mode}): {len(plan.maps)} maps"]
    for m in plan.maps:
        keys = ", ".join(f"{k.name}:{k.type}" for k in m.keys)
        out.append(f"MAP {m.name}[{keys}]: {m.type}" + (" (query)" if m.role == "query" else ""))
        out.append(f"    := {print_expr(m.definition)}")
        for x in m.maintenance:
            on = f"on {x.relation}" if x.relation else "at start"
            reads = f", reading {', '.join(x.reads)}" if x.reads else ""
            out.append(f"    {on}: {x.how}{reads}")
        if not m.maintenance:
            out.append("    never updated (a static or constant map)")
    if plan.decisions:
        out += ["", "decisions:"] + [f"  {d}" for d in plan.decisions]
    return "\n".join(out) + "\n"
