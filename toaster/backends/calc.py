"""`calc`: re-evaluates each query map's calculus definition over the current database.

Slow and obviously correct: no deltas, no auxiliary maps, just the formal semantics.
"""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.engine import Engine
from toaster.runtime.batch import Batch


class CalcEngine(Engine):
    backend = "calc"

    def __init__(self, calc_program):
        super().__init__(calc_program.relations, calc_program.queries)
        self.maps = {m.name: m for m in calc_program.maps}
        self.db = Database(relations={r.name: {} for r in calc_program.relations})

    def _apply(self, batch: Batch) -> None:
        table = self.db.relations[batch.relation.upper()]
        for sign, row in batch.rows():
            v = table.get(row, 0) + sign
            if v == 0:
                table.pop(row, None)
            else:
                table[row] = v

    def read_map(self, name: str) -> dict:
        m = self.maps.get(name)
        if m is None:
            raise self._unknown_map(name)
        return evaluate(m.definition, self.db, {}, tuple(m.keys))
