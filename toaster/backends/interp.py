"""`interp`: the reference engine. Executes M3 triggers in Python with the calculus evaluator.

Integers are exact while a statement is evaluated; a value written to a map must fit 64 bits
(else IntegerOverflowError), and a batch that fails is rolled back through a journal (toaster/runtime/int64.py).
"""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.m3.ir import M3Program
from toaster.engine import TriggerEngine
from toaster.runtime.int64 import INT64_MAX, INT64_MIN, Journal, overflow_error, run_atomically


class InterpEngine(TriggerEngine):
    backend = "interp"

    def __init__(self, program: M3Program):
        super().__init__(program)
        self.db = Database(maps={m.name: {} for m in program.maps})
        self.journal = Journal()
        run_atomically(self.journal, self._start)

    def _apply(self, batch) -> None:
        run_atomically(self.journal, super()._apply, batch)

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
            journal = self.journal
            if stmt.op == ":=":
                journal.clear(target)
                target.clear()
            for key, val in result.items():
                b = dict(zip(out_keys, key))
                full = tuple(env[k] if k in env else b[k] for k in stmt.keys)
                nv = target.get(full, 0) + val
                if nv.__class__ is int and (nv > INT64_MAX or nv < INT64_MIN):
                    raise overflow_error(stmt.target, self.queries, self.program)
                journal.write(target, full)
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
