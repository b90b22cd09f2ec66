"""`calc`: re-evaluates each query map's calculus definition over the current database.

Slow and obviously correct: no deltas, no auxiliary maps, just the formal semantics.
After each batch the INT-valued maps are evaluated (and kept for reads until the next batch): a
value outside the 64-bit range undoes the batch and raises IntegerOverflowError (toaster/runtime/int64.py).
"""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.engine import Engine
from toaster.runtime.int64 import check_value
from toaster.runtime.batch import Batch
from toaster.types import INT


class CalcEngine(Engine):
    backend = "calc"

    def __init__(self, calc_program):
        super().__init__(calc_program.relations, calc_program.queries)
        self.maps = {m.name: m for m in calc_program.maps}
        self.db = Database(relations={r.name: {} for r in calc_program.relations})
        self._values: dict = {}      # map name -> its value after the last batch (INT maps)

    def _apply(self, batch: Batch) -> None:
        table = self.db.relations[batch.relation.upper()]
        rows = list(batch.rows())
        self._add_rows(table, rows, 1)
        self._values = {}
        try:
            for m in self.maps.values():
                if m.type == INT:
                    got = self._values[m.name] = self._evaluate(m)
                    for v in got.values():
                        check_value(v, m.name, self.queries)
        except BaseException:
            self._values = {}
            self._add_rows(table, rows, -1)      # the batch never happened
            raise

    @staticmethod
    def _add_rows(table: dict, rows, direction: int) -> None:
        for sign, row in rows:
            v = table.get(row, 0) + direction * sign
            if v == 0:
                table.pop(row, None)
            else:
                table[row] = v

    def _evaluate(self, m) -> dict:
        return evaluate(m.definition, self.db, {}, tuple(m.keys))

    def _checkpoint_state(self, with_tables: bool):
        """calc keeps the base relations (row -> multiplicity), not maps."""
        from toaster.checkpoint import CheckpointState, TableLayout, describe_program
        layouts = tuple(TableLayout(r.name, tuple(r.types), INT) for r in self.relations.values())
        tables = {n: dict(t) for n, t in self.db.relations.items()} if with_tables else {}
        return CheckpointState(self.backend, "relations",
                               describe_program(self.relations.values(), self.queries, layouts),
                               layouts, tables, self._streamed)

    def _restore_tables(self, tables: dict) -> None:
        self._values = {}
        for name, rows in tables.items():
            self.db.relations[name].clear()
            self.db.relations[name].update((k, v) for k, v in rows.items() if v != 0)

    def read_map(self, name: str) -> dict:
        m = self.maps.get(name)
        if m is None:
            raise self._unknown_map(name)
        got = self._values.get(name)
        return dict(got) if got is not None else self._evaluate(m)
