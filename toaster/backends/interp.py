"""`interp`: the reference engine. Executes M3 triggers in Python with the calculus evaluator."""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.m3.ir import M3Program
from toaster.engine import TriggerEngine


class InterpEngine(TriggerEngine):
    backend = "interp"

    def __init__(self, program: M3Program):
        super().__init__(program)
        self.db = Database(maps={m.name: {} for m in program.maps})
        self._start()

    def _run_tuple(self, trigger, row: tuple) -> None:
        self._run(trigger, dict(zip(trigger.event.args, row)))

    def _run_batch(self, trigger, relation: str, delta: dict) -> None:
        self.db.deltas[relation] = delta
        try:
            self._run(trigger, {})
        finally:
            self.db.deltas.pop(relation, None)

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

    def _checkpoint_state(self, with_tables: bool):
        from toaster.checkpoint import TableLayout
        return self._map_state((TableLayout(m.name, tuple(k.type for k in m.keys), m.type)
                                for m in self.program.maps), with_tables)

    def _restore_tables(self, tables: dict) -> None:
        for name, entries in tables.items():
            self.db.maps[name] = {k: v for k, v in entries.items() if v != 0}

    def read_map(self, name: str) -> dict:
        if name not in self.db.maps:
            raise self._unknown_map(name)
        return {k: v for k, v in self.db.maps[name].items() if v != 0}
