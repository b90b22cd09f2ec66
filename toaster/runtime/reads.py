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
    """Per column of `relation`, whether some trigger of it uses the column: a single-tuple
    trigger through the column's argument; an imperative batch trigger through the keys of its
    loops over the delta map, followed into the keys of the temporaries they fill (a column no
    statement needs is projected away: rows that differ only there merge in the delta map, their
    multiplicities added, where no statement can tell: toaster.runtime.delta_reads). An M3
    batch trigger reads every column."""
    used = [False] * ncols
    for t in program.triggers:
        if t.event.relation != relation:
            continue
        params = getattr(t, "params", None)
        if t.event.kind == "batch":
            loops = _delta_columns_read(t.body, relation, ncols, program) if params is not None else None
            if loops is None:
                return (True,) * ncols
            used = [u or v for u, v in zip(used, loops)]
            continue
        if t.event.kind not in ("insert", "delete"):
            continue
        if params is not None:                       # ImpTrigger: LocalRefs in the body
            args, body = tuple(p.name for p in params), t.body
        else:                                        # M3 Trigger: Vars in the statements
            args, body = tuple(v.name for v in t.event.args), t.statements
        names = _names_in(body)
        for j, a in enumerate(args[:ncols]):
            used[j] = used[j] or a in names
    return tuple(used)


class ProgramReads:
    """relations_needed() / columns_needed(relation) of a program, as its engine answers them
    (the engine delegates here), known before the engine is built: `--run` opens the files
    with them while the LLVM engine compiles."""

    def __init__(self, program):
        self.program = program
        self._decls = {r.name.upper(): r for r in program.relations}
        self._columns: dict = {}

    def relations_needed(self) -> frozenset:
        return relations_read(self.program)

    def columns_needed(self, relation: str) -> tuple:
        need = self._columns.get(relation)
        if need is None:
            decl = self._decls[relation.upper()]
            need = self._columns[relation] = columns_read(self.program, decl.name, len(decl.columns))
        return need


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


def _delta_columns_read(body, relation: str, ncols: int, program=None) -> list | None:
    """Columns of DELTA_<relation> that the batch trigger needs; None when the delta map is
    used other than by loops over it. See toaster.runtime.delta_reads."""
    from toaster.runtime.delta_reads import delta_columns_needed
    return delta_columns_needed(body, relation, ncols, program)
