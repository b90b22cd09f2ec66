"""The DuckDB oracle: the current database as multisets, queried by DuckDB, and result comparison.

    oracle = Oracle(relations)
    oracle.apply(batch)                          # same batches the engine gets
    rows = oracle.query("SELECT ... GROUP BY ...")
    diffs = compare_results(engine.result("QUERY_1"), rows, key_columns=1)

Column types in DuckDB: INT -> BIGINT, FLOAT -> DOUBLE, DATE -> DATE (from YYYYMMDD),
STRING -> VARCHAR, BOOL -> BOOLEAN. Query results come back in toaster's runtime form (dates
as YYYYMMDD ints, DECIMAL as float, NULL as None).
"""
from __future__ import annotations

import datetime
import decimal
import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from toaster.engine import ResultTable
from toaster.runtime.batch import Batch, NUMPY_DTYPES
from toaster.runtime.nulls import logical_rows, physical_rows
from toaster.schema import RelationDecl
from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL, int_to_date

DUCKDB_TYPES = {INT: "BIGINT", FLOAT: "DOUBLE", DATE: "DATE", STRING: "VARCHAR", BOOL: "BOOLEAN"}
ARROW_TYPES = {INT: pa.int64(), FLOAT: pa.float64(), DATE: pa.int64(), STRING: pa.string(), BOOL: pa.bool_()}

REL_TOL = 1e-6
ABS_TOL = 1e-9


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Oracle:
    """Holds the database as a Counter per relation and answers SQL with an in-memory DuckDB.

    A relation's DuckDB table is rebuilt (from numpy columns, one row per copy) only when it
    changed since the last query. Multiplicities may go negative only transiently inside a
    batch; a negative count at query time is an error of the stream, not of the engine.
    """

    def __init__(self, relations: Sequence[RelationDecl]):
        import duckdb
        self.relations = {d.name: d for d in relations}
        self.contents: dict[str, Counter] = {d.name: Counter() for d in relations}
        self._dirty = set(self.relations)
        self.con = duckdb.connect(":memory:")

    def apply(self, batch: Batch) -> None:
        held = self.contents[batch.relation.upper()]
        for sign, row in batch.rows():
            row = _one_nan(row)
            held[row] += sign
            if held[row] == 0:
                del held[row]
        self._dirty.add(batch.relation.upper())

    def load(self, relation: str, rows) -> None:
        d = self.relations[relation.upper()]
        self.apply(Batch.from_rows(d.name, d.types, physical_rows(d, list(rows))))

    def query(self, sql: str) -> list[tuple]:
        self._sync()
        rows = self.con.execute(sql).fetchall()
        return [tuple(from_duckdb(v) for v in r) for r in rows]

    def close(self) -> None:
        self.con.close()

    def _sync(self) -> None:
        for name in sorted(self._dirty):
            self._rebuild(self.relations[name])
        self._dirty.clear()

    def _rebuild(self, d: RelationDecl) -> None:
        held = self.contents[d.name]
        bad = [(t, c) for t, c in held.items() if c < 0]
        if bad:
            raise AssertionError(f"oracle: relation {d.name} has negative multiplicities, e.g. {bad[:3]} "
                                 "(the stream deletes tuples that are not present)")
        logical = d.logical_columns
        cols = ", ".join(f"{_q(c.name)} {DUCKDB_TYPES[c.type]}" for c in logical)
        self.con.execute(f"CREATE OR REPLACE TABLE {_q(d.name)} ({cols})")
        if not held:
            return
        tuples = list(held)
        counts = np.array([held[t] for t in tuples], dtype=np.int64)
        arrays = {}
        if d.has_nulls:      # NULLs as Arrow nulls (numpy columns cannot hold them)
            rows = logical_rows(d, tuples)
            index = np.repeat(np.arange(len(rows)), counts)
            arrays = pa.table({f"c{j}": pa.array([rows[i][j] for i in index], ARROW_TYPES[c.type])
                               for j, c in enumerate(logical)})
        else:
            for j, c in enumerate(d.columns):
                col = np.empty(len(tuples), dtype=NUMPY_DTYPES[c.type])
                col[:] = [t[j] for t in tuples]
                # as Arrow: DuckDB reads a numpy float column's NaN as NULL, Arrow's as NaN
                arrays[f"c{j}"] = pa.array(np.repeat(col, counts))
            arrays = pa.table(arrays)
        self.con.register("__oracle_input", arrays)
        try:
            exprs = ", ".join(_from_input(f"c{j}", c.type) for j, c in enumerate(logical))
            self.con.execute(f"INSERT INTO {_q(d.name)} SELECT {exprs} FROM __oracle_input")
        finally:
            self.con.unregister("__oracle_input")


def _one_nan(row: tuple) -> tuple:
    """The row with every NaN as math.nan: a Counter finds a NaN row again only by identity
    (NaN equals nothing, and its hash is its id), so the row a deletion names must hold the
    same NaN object as the inserted one."""
    if any(isinstance(v, float) and v != v for v in row):
        return tuple(math.nan if isinstance(v, float) and v != v else v for v in row)
    return row


def _from_input(col: str, t: Type) -> str:
    if t == DATE:   # YYYYMMDD int -> DATE
        return f"make_date(CAST({col} // 10000 AS INTEGER), CAST({col} // 100 % 100 AS INTEGER), CAST({col} % 100 AS INTEGER))"
    return f"CAST({col} AS {DUCKDB_TYPES[t]})"


def from_duckdb(v):
    """A DuckDB result value in toaster's runtime form."""
    if isinstance(v, datetime.datetime):
        return v.year * 10000 + v.month * 100 + v.day
    if isinstance(v, datetime.date):
        return v.year * 10000 + v.month * 100 + v.day
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


# --------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Difference:
    key: tuple
    engine: tuple | None     # value columns, None if the key is missing (= zeros)
    oracle: tuple | None

    def __str__(self) -> str:
        return f"key {self.key!r}: engine {_show(self.engine)}  oracle {_show(self.oracle)}"


def _show(vals) -> str:
    return "(missing)" if vals is None else repr(vals)


def values_equal(a, b, strict_nulls: bool = False) -> bool:
    """Numbers equal up to REL_TOL/ABS_TOL (NaN equals NaN); others exactly. None (NULL) counts
    as 0 -- DuckDB's SUM over no rows is NULL where DBToaster's is 0 -- unless strict_nulls
    (a program with nullable columns, whose engines report NULLs): then None equals only None."""
    if strict_nulls and (a is None or b is None):
        return a is None and b is None
    a = 0 if a is None else a
    b = 0 if b is None else b
    if isinstance(a, (int, float, np.integer, np.floating)) and isinstance(b, (int, float, np.integer, np.floating)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return int(a) == int(b)
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def _is_zero(v, strict_nulls: bool = False) -> bool:
    return values_equal(v, 0, strict_nulls)


def _norm_key(k: tuple, types: Sequence[Type] | None) -> tuple:
    out = []
    for i, v in enumerate(k):
        v = from_duckdb(v)
        t = types[i] if types is not None and i < len(types) else None
        if t == FLOAT and isinstance(v, (int, float, np.number)):
            v = float(v)
            v = math.nan if v != v else v        # one NaN object: dict keys match by identity
        elif t in (INT, DATE) and isinstance(v, (int, float, np.number)) and float(v).is_integer():
            v = int(v)
        elif isinstance(v, np.generic):
            v = v.item()
        out.append(v)
    return tuple(out)


def compare_results(engine_result: ResultTable, duckdb_rows, key_columns: int | None = None,
                    strict_nulls: bool = False) -> list[Difference]:
    """Differences between an engine's result table and the oracle's rows ([] if they agree).

    Rows are keyed by their first key_columns columns (default: engine_result.key_columns);
    a missing key equals all-zero values, rows whose values are all zero are ignored, floats
    compare to a relative tolerance of 1e-6 (absolute 1e-9), dates as YYYYMMDD ints.
    """
    nkey = engine_result.key_columns if key_columns is None else key_columns
    key_types = engine_result.types[:nkey]
    width = len(engine_result.columns)

    def index(rows, who):
        out = {}
        for r in rows:
            r = tuple(r)
            if len(r) != width:
                raise AssertionError(f"{who} row {r!r} has {len(r)} columns; "
                                     f"{engine_result.name} has {width}: {list(engine_result.columns)}")
            k = _norm_key(r[:nkey], key_types)
            vals = tuple(from_duckdb(v) for v in r[nkey:])
            if k in out:
                raise AssertionError(f"{who} returned key {k!r} twice for {engine_result.name} "
                                     "(the oracle query must group by the key columns)")
            out[k] = vals
        return out

    mine = index(engine_result.rows, "engine")
    theirs = index(duckdb_rows, "oracle")
    diffs = []
    for k in sorted(set(mine) | set(theirs), key=_key_order):
        a, b = mine.get(k), theirs.get(k)
        a_zero = a is None or all(_is_zero(v, strict_nulls) for v in a)
        b_zero = b is None or all(_is_zero(v, strict_nulls) for v in b)
        if a_zero and b_zero:
            continue
        if a_zero != b_zero or not all(values_equal(x, y, strict_nulls) for x, y in zip(a, b)):
            diffs.append(Difference(k, None if a_zero else a, None if b_zero else b))
    return diffs


def _key_order(k):
    return tuple((2, 0, "") if v is None else (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v)) for v in k)


def format_differences(name: str, columns: Sequence[str], key_columns: int, diffs: Sequence[Difference],
                       types: Sequence[Type] | None = None, limit: int = 20) -> str:
    """A readable listing of differences (at most `limit`), keys shown with dates as YYYY-MM-DD."""
    keys = list(columns[:key_columns])
    vals = list(columns[key_columns:])
    lines = [f"{name}: {len(diffs)} differing key(s); key columns {keys}, value columns {vals}"]
    for d in diffs[:limit]:
        shown = d.key
        if types is not None:
            shown = tuple(int_to_date(v) if t == DATE and isinstance(v, int) else v
                          for v, t in zip(d.key, types[:key_columns]))
        lines.append(f"  key {shown!r}: engine {_show(d.engine)}  oracle {_show(d.oracle)}")
    if len(diffs) > limit:
        lines.append(f"  ... and {len(diffs) - limit} more")
    return "\n".join(lines)
