"""Columnar batches of updates for one relation."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL

NUMPY_DTYPES = {INT: np.int64, DATE: np.int64, FLOAT: np.float64, STRING: object, BOOL: np.bool_}


@dataclass(frozen=True, eq=False)
class Batch:
    """`signs[i]` is +1 (insert) or -1 (delete) for the row made of columns[j][i].

    Column dtypes: int64 for INT and DATE (YYYYMMDD), float64 for FLOAT, object (str) for
    STRING. Build one with Batch.from_rows for convenience.
    """
    relation: str
    signs: np.ndarray      # int8
    columns: tuple         # tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return len(self.signs)

    @staticmethod
    def from_rows(relation: str, types, rows, signs=None) -> "Batch":
        rows = list(rows)
        n = len(rows)
        if signs is None:
            signs = np.ones(n, dtype=np.int8)
        else:
            signs = np.asarray(list(signs), dtype=np.int8)
        cols = []
        for j, t in enumerate(types):
            vals = [r[j] for r in rows]
            cols.append(np.array(vals, dtype=NUMPY_DTYPES[t]) if n else np.empty(0, dtype=NUMPY_DTYPES[t]))
        return Batch(relation, signs, tuple(cols))

    def rows(self):
        """Yield (sign, row tuple) with plain Python values."""
        cols = [c.tolist() for c in self.columns]
        for i, s in enumerate(self.signs.tolist()):
            yield s, tuple(c[i] for c in cols)
