"""What a trigger program reads of its input: the relations that have triggers, and per
relation the columns whose trigger arguments occur in the trigger statements. Readers use it
to skip relations and columns (toaster.runtime.csv_source.load_sources); engines use it to
skip converting columns (toaster.engine.Engine.columns_needed)."""
from __future__ import annotations

import dataclasses


def relations_read(program) -> frozenset:
    """Relations with an insert, delete or batch trigger (M3Program or ImpProgram)."""
    return frozenset(t.event.relation for t in program.triggers if t.event.kind in ("insert", "delete", "batch"))


def columns_read(program, relation: str, ncols: int) -> tuple:
    """Per column of `relation`, whether some single-tuple trigger of it uses the column's
    argument. A batch trigger reads the whole delta relation: every column."""
    used = [False] * ncols
    for t in program.triggers:
        if t.event.relation != relation:
            continue
        if t.event.kind == "batch":
            return (True,) * ncols
        if t.event.kind not in ("insert", "delete"):
            continue
        params = getattr(t, "params", None)
        if params is not None:                       # ImpTrigger: LocalRefs in the body
            args, body = tuple(p.name for p in params), t.body
        else:                                        # M3 Trigger: Vars in the statements
            args, body = tuple(v.name for v in t.event.args), t.statements
        names = _names_in(body)
        for j, a in enumerate(args[:ncols]):
            used[j] = used[j] or a in names
    return tuple(used)


def _names_in(obj) -> set:
    """Every `.name` of a node (Var, LocalRef, ...) inside a nested frozen-dataclass IR."""
    out, stack = set(), [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list, frozenset, set)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            name = getattr(x, "name", None)
            if isinstance(name, str):
                out.add(name)
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
    return out
