"""NULLs at the runtime boundary: logical rows and columns (None, Arrow nulls) <-> the physical
layout engines see, where a nullable column is its value (the type's NULL value where NULL) and
an INT null flag right after it (toaster.schema.Column).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from toaster.errors import InputError
from toaster.types import BOOL, DATE, FLOAT, INT, STRING

NULL_DATE = 10101          # 0001-01-01: a valid date, so NULL rows pass the calendar check


def null_value(t):
    """What a NULL of type t holds in its value column (one canonical key per type)."""
    return {INT: 0, FLOAT: 0.0, DATE: NULL_DATE, STRING: "", BOOL: False}[t]


def physical_rows(decl, rows) -> list:
    """Logical Python rows (None = NULL in a nullable column) -> physical rows."""
    if not decl.has_nulls:
        return rows
    logical = decl.logical_columns
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, (tuple, list)) or len(row) != len(logical):
            return rows          # the arity check of Batch.from_rows reports it
        phys = []
        for c, v in zip(logical, row):
            if c.nullable:
                phys += [null_value(c.type), 1] if v is None else [v, 0]
            else:
                phys.append(v)
        out.append(tuple(phys))
    return out


def logical_rows(decl, rows):
    """Physical rows -> logical rows with None where a flag is 1 (for DuckDB and printing)."""
    if not decl.has_nulls:
        return rows
    keep = [j for j, c in enumerate(decl.columns) if c.flag_of is None]
    flag = {j: j + 1 for j, c in enumerate(decl.columns) if c.nullable}
    return [tuple(None if j in flag and row[flag[j]] else row[j] for j in keep) for row in rows]


def physical_batch(decl, batch):
    """A batch given with the logical columns (nullable ones holding None / Arrow nulls) ->
    the physical columns; a batch that already has them is returned as it is."""
    from toaster.runtime.batch import Batch
    if not decl.has_nulls or len(batch.columns) != len(decl.logical_columns):
        return batch
    cols = []
    for c, col in zip(decl.logical_columns, batch.columns):
        if not c.nullable:
            cols.append(col)
            continue
        if col is None:
            raise InputError(f"{decl.name}: nullable column {c.name} must be given (with its NULLs)")
        values, flags = _split_nulls(c.type, col)
        cols += [values, flags]
    return Batch(batch.relation, batch.signs, tuple(cols), batch.seq)


def _split_nulls(t, col):
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        mask = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if mask.any():
            fill = pa.scalar(null_value(t) if t != DATE else None, type=col.type) if t != DATE else None
            col = col.fill_null(fill) if fill is not None else col
        values = col
        if t == DATE and mask.any():
            values = np.array([null_value(t) if m else v for v, m in zip(col.to_pylist(), mask)], dtype=object)
    else:
        arr = np.asarray(col, dtype=object) if not isinstance(col, np.ndarray) or col.dtype == object else col
        if arr.dtype == object:
            mask = np.array([v is None for v in arr], dtype=bool)
            values = arr.copy()
            values[mask] = null_value(t)
        else:
            mask = np.isnan(arr) if arr.dtype.kind == "f" and t != FLOAT else np.zeros(len(arr), dtype=bool)
            values = arr
    return values, mask.astype(np.int64)
