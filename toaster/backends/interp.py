"""`interp`: the reference engine. Executes M3 triggers in Python with the calculus evaluator."""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.calculus.m3 import M3Program
from toaster.engine import Engine
from toaster.runtime.batch import Batch


class InterpEngine(Engine):
    backend = "interp"

    def __init__(self, program: M3Program):
        super().__init__(program.relations, program.queries)
        self.program = program
        self.db = Database(maps={m.name: {} for m in program.maps})
        self.triggers = {(t.event.kind, t.event.relation): t for t in program.triggers}

    def _apply(self, batch: Batch) -> None:
        rel = batch.relation.upper()
        if self.program.mode == "batch":
            delta: dict = {}
            for sign, row in batch.rows():
                delta[row] = delta.get(row, 0) + sign
            self.db.deltas[rel] = {k: v for k, v in delta.items() if v != 0}
            try:
                trig = self.triggers.get(("batch", rel))
                if trig is not None:
                    self._run(trig, {})
            finally:
                self.db.deltas.pop(rel, None)
            return
        for sign, row in batch.rows():
            trig = self.triggers.get(("insert" if sign > 0 else "delete", rel))
            if trig is not None:
                self._run(trig, dict(zip(trig.event.args, row)))

    def _run(self, trigger, env: dict) -> None:
        for stmt in trigger.statements:
            out_keys = tuple(k for k in stmt.keys if k not in env)
            result = evaluate(stmt.rhs, self.db, env, out_keys)
            target = self.db.maps[stmt.target]
            if stmt.op == ":=":
                target.clear()
            for key, val in result.items():
                b = dict(zip(out_keys, key))
                full = tuple(env[k] if k in env else b[k] for k in stmt.keys)
                nv = target.get(full, 0) + val
                if nv == 0:
                    target.pop(full, None)
                else:
                    target[full] = nv

    def read_map(self, name: str) -> dict:
        return {k: v for k, v in self.db.maps[name].items() if v != 0}
