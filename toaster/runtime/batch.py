"""Columnar batches of updates for one relation."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from toaster.types import INT, FLOAT, DATE, STRING, BOOL

NUMPY_DTYPES = {INT: np.int64, DATE: np.int64, FLOAT: np.float64, STRING: object, BOOL: np.bool_}


@dataclass(frozen=True, eq=False)
class Batch:
    """`signs[i]` is +1 (insert) or -1 (delete) for the row made of columns[j][i].

    Canonical columns (what Engine.apply hands to a backend): int64 numpy arrays for INT and
    DATE (YYYYMMDD), float64 for FLOAT, bool for BOOL, and a pyarrow string (or dictionary)
    Array / ChunkedArray for STRING. A column the engine does not read may be None (readers
    skip converting it). Engine.apply also accepts other integer/float numpy dtypes, pyarrow
    arrays, pandas Series, object arrays and datetime64/date32 DATE columns, and checks them.
    Build one from Python rows with Batch.from_rows (checked value by value first).
    """
    relation: str
    signs: np.ndarray      # int8
    columns: tuple         # tuple[np.ndarray | pa.Array | pa.ChunkedArray | None, ...]
    # each event's position in the stream when its source gives one (the `seq` field of a CSV
    # stream with deletions), else None; engines ignore it, readers order streams by it
    seq: np.ndarray | None = None
    # True when a toaster reader built the columns canonical and checked every value (CSV via
    # Arrow, orderbook): Engine.apply then checks dtypes and lengths only, O(columns) not O(rows)
    checked: bool = False
    # (root Batch, first row) when Batch.slice cut this batch from a larger one: engines reuse
    # what they computed once for the root's columns (string ids). Not pickled.
    origin: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["origin"] = None          # a slice pickles its own rows, not its root's
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __len__(self) -> int:
        return len(self.signs)

    @staticmethod
    def from_rows(relation: str, types, rows, signs=None, names=None) -> "Batch":
        """Check Python rows (arity, and each value's type: no silent coercion) and build the
        typed columns. Raises InputError naming relation, column and row index (0-based)."""
        from toaster.runtime.checks import columns_from_rows
        return columns_from_rows(relation, tuple(types), rows, signs, names)

    @staticmethod
    def from_columns(relation: str, columns, signs=None) -> "Batch":
        """A batch from a pyarrow Table/RecordBatch, a pandas DataFrame or a sequence of
        column arrays, taken as they are (Engine.apply checks them); all inserts by default."""
        if isinstance(columns, (pa.Table, pa.RecordBatch)):
            cols = tuple(columns.column(i) for i in range(columns.num_columns))
        elif hasattr(columns, "columns") and hasattr(columns, "iloc"):     # pandas DataFrame
            cols = tuple(columns[c] for c in columns.columns)
        else:
            cols = tuple(columns)
        n = len(cols[0]) if cols else 0
        s = np.ones(n, dtype=np.int8) if signs is None else np.asarray(signs)
        return Batch(relation, s, cols)

    def slice(self, start: int, stop: int) -> "Batch":
        start, stop, _ = slice(start, stop).indices(len(self.signs))
        stop = max(start, stop)
        out = Batch(self.relation, self.signs[start:stop],
                    tuple(None if c is None else c[start:stop] for c in self.columns),
                    None if self.seq is None else self.seq[start:stop], self.checked)
        root, first = self.origin if self.origin is not None else (self, 0)
        object.__setattr__(out, "origin", (root, first + start))
        return out

    def take(self, indices) -> "Batch":
        idx = np.asarray(indices, dtype=np.int64)
        return Batch(self.relation, self.signs[idx], tuple(_take(c, idx) for c in self.columns),
                     None if self.seq is None else self.seq[idx], self.checked)

    @staticmethod
    def concat(batches) -> "Batch":
        """One batch of the rows of several batches of one relation, in order."""
        batches = list(batches)
        cols = tuple(_concat([b.columns[j] for b in batches]) for j in range(len(batches[0].columns)))
        seq = None if any(b.seq is None for b in batches) else np.concatenate([b.seq for b in batches])
        return Batch(batches[0].relation, np.concatenate([b.signs for b in batches]), cols, seq,
                     all(b.checked for b in batches))

    def python_columns(self) -> list[list]:
        """Every column as a list of plain Python values."""
        out = []
        for j, c in enumerate(self.columns):
            if c is None:
                raise ValueError(f"{self.relation}: column {j + 1} was not read into this batch")
            out.append(c.to_pylist() if isinstance(c, (pa.Array, pa.ChunkedArray)) else np.asarray(c).tolist())
        return out

    def rows(self):
        """Yield (sign, row tuple) with plain Python values."""
        return zip(self.signs.tolist(), zip(*self.python_columns())) if self.columns else \
            ((s, ()) for s in self.signs.tolist())


def _take(c, idx: np.ndarray):
    if c is None:
        return None
    if isinstance(c, (pa.Array, pa.ChunkedArray)):
        return c.take(pa.array(idx))
    return np.asarray(c)[idx]


def _concat(cols):
    if any(c is None for c in cols):
        return None
    if any(isinstance(c, (pa.Array, pa.ChunkedArray)) for c in cols):
        arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(c) for c in cols]
        return pa.chunked_array(arrays).combine_chunks()
    return np.concatenate(cols)
