"""NULLs at the runtime boundary: logical rows and columns (None, Arrow nulls) <-> the physical
layout engines see, where a nullable column is its value (the type's NULL value where NULL) and
an INT null flag right after it (toaster.schema.Column).
"""
from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa

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
        if col is None:            # not read by the engine: neither is its flag
            cols += [None, None]
            continue
        values, flags = _split_nulls(c.type, col)
        cols += [values, flags]
    return Batch(batch.relation, batch.signs, tuple(cols), batch.seq)


def _split_nulls(t, col):
    """(values with the type's NULL value where NULL, int64 flags) of a logical column."""
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        mask = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if not mask.any():
            return col, mask.astype(np.int64)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        fill = datetime.date(1, 1, 1) if pa.types.is_date(col.type) else \
            "0001-01-01" if t == DATE and text else null_value(t)
        try:
            return col.fill_null(pa.scalar(fill, col.type)), mask.astype(np.int64)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return col, mask.astype(np.int64)       # a column of the wrong type: checks.py says so
    arr = np.asarray(col) if isinstance(col, np.ndarray) else np.asarray(list(col), dtype=object)
    if arr.dtype != object:
        return arr, np.zeros(len(arr), dtype=np.int64)
    mask = np.array([v is None for v in arr], dtype=bool)
    values = arr.copy()
    values[mask] = null_value(t)
    if t != STRING and not mask.all():
        values = values.tolist()     # Python values, checked by type as any object column
        values = np.array(values, dtype=object)
    return values, mask.astype(np.int64)


def logical_decl(decl):
    """decl as its source file has it: the logical columns (nullable ones still marked)."""
    from dataclasses import replace
    return replace(decl, columns=decl.logical_columns)


def logical_needed(decl, needed):
    """Per logical column whether it is read, from per-physical-column flags (or None)."""
    if needed is None:
        return None
    return tuple(need or (c.nullable and needed[j + 1])
                 for j, (c, need) in enumerate(zip(decl.columns, needed)) if c.flag_of is None)
