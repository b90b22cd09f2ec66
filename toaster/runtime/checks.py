"""Input checks at the boundary: every batch is checked by type and arity before any of it is
applied, and converted to the canonical columns of toaster.runtime.batch.Batch.

Large data is checked per *column* (dtype, vectorized range/calendar checks, Arrow's C++
conversion for strings); Python work per value happens only in Batch.from_rows, whose input
is Python rows anyway, and when locating the first bad value of a column known to be bad.

Accepted, without silent coercion:
  INT     Python/numpy ints (not bool), integer numpy/Arrow columns within int64
  FLOAT   Python/numpy floats and ints (not bool), float or integer columns
  DATE    datetime.date (not datetime), 'YYYY-MM-DD' strings, ints YYYYMMDD; datetime64[D]
          and Arrow date32 columns; all calendar-checked (years 1-9999)
  STRING  str only (not bytes); string or dictionary<string> Arrow columns, without nulls
  BOOL    bool / numpy bool only
"""
from __future__ import annotations

import datetime
import re

import numpy as np
import pyarrow as pa

from toaster.errors import InputError
from toaster.runtime.batch import Batch, NUMPY_DTYPES
from toaster.types import INT, FLOAT, DATE, STRING, BOOL

_ISO_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_MONTH_DAY_OK = np.zeros(10000, dtype=bool)          # MMDD -> a day of some year
for _m, _days in enumerate((31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31), start=1):
    _MONTH_DAY_OK[_m * 100 + 1:_m * 100 + _days + 1] = True


# ----------------------------------------------------------------------------- dates
def yyyymmdd_ok(v: np.ndarray) -> np.ndarray:
    """Mask of the int64 values that are real calendar dates YYYYMMDD (years 1-9999): a range
    check, a month-day table lookup, and a leap-year check for the February 29ths only. A long
    column spanning a short range (the usual case) checks the range once and looks values up."""
    v = np.asarray(v, dtype=np.int64)
    if len(v) > 4096:
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < len(v) // 4:
            return _yyyymmdd_ok(np.arange(lo, hi + 1, dtype=np.int64))[v - lo]
    return _yyyymmdd_ok(v)


def _yyyymmdd_ok(v: np.ndarray) -> np.ndarray:
    md = v % 10000
    ok = (v >= 10101) & (v <= 99991231) & _MONTH_DAY_OK[md]
    feb29 = np.flatnonzero(md == 229)
    if len(feb29):
        y = v[feb29] // 10000
        ok[feb29] &= (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    return ok


def days_to_yyyymmdd(days: np.ndarray) -> np.ndarray:
    """datetime64[D] (or int day numbers since 1970-01-01) -> int64 YYYYMMDD, vectorized
    with integer arithmetic (the proleptic Gregorian civil-from-days algorithm); a column
    spanning few days (the usual case) converts its range once and looks each value up."""
    z = np.asarray(days)
    if z.dtype.kind != "i":           # integer day numbers (Arrow's date32 as int32) need no copy
        z = z.astype("datetime64[D]", copy=False).view(np.int64)
    if len(z) > 1024:
        lo, hi = int(z.min()), int(z.max())
        if hi - lo < len(z) // 4:     # z - lo is in the table's range: take() need not check it
            return _civil_from_days(np.arange(lo, hi + 1, dtype=np.int64)).take(z - lo, mode="clip")
    return _civil_from_days(z.astype(np.int64, copy=False))


def _civil_from_days(z: np.ndarray) -> np.ndarray:
    z = z + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097                                        # [0, 146096]
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)              # [0, 365], from March 1st
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    y = yoe + era * 400 + (m <= 2)
    return y * 10000 + m * 100 + d


def date_value(v) -> int:
    """One Python date value (date, ISO string, int YYYYMMDD) -> YYYYMMDD; ValueError if bad."""
    if isinstance(v, datetime.datetime):
        raise ValueError(f"expected a date, got a datetime {v!r} (the time would be dropped)")
    if isinstance(v, datetime.date):
        return v.year * 10000 + v.month * 100 + v.day
    if isinstance(v, str):
        m = _ISO_DATE.match(v)
        if not m:
            raise ValueError(f"not a date (YYYY-MM-DD): {v!r}")
        n = int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3))
    elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        n = int(v)
    else:
        raise ValueError(f"expected a date, got {type(v).__name__} {v!r}")
    if not (-2**63 <= n < 2**63) or not yyyymmdd_ok(np.array([n], dtype=np.int64))[0]:
        raise ValueError(f"not a calendar date: {v!r}")
    return n


# ----------------------------------------------------------------------------- Python rows
def _is_int_type(t) -> bool:
    return issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_))


def _is_float_type(t) -> bool:
    return _is_int_type(t) or issubclass(t, (float, np.floating))


_TYPE_OK = {
    INT: _is_int_type,
    FLOAT: _is_float_type,
    STRING: lambda t: issubclass(t, str),
    BOOL: lambda t: issubclass(t, (bool, np.bool_)),
    DATE: lambda t: (_is_int_type(t) or issubclass(t, str) or issubclass(t, datetime.date))
    and not issubclass(t, datetime.datetime),
}
_WANT = {INT: "an int", FLOAT: "a float", STRING: "a string", BOOL: "a bool", DATE: "a date"}


def _where(relation, names, j) -> str:
    return f"{relation}.{names[j]}" if names else f"{relation} column {j + 1}"


def columns_from_rows(relation: str, types: tuple, rows, signs, names) -> Batch:
    rows = rows if isinstance(rows, list) else list(rows)
    n, k = len(rows), len(types)
    bad_rows = [t for t in set(map(type, rows)) if not issubclass(t, (tuple, list))]
    if bad_rows:
        i = next(i for i, r in enumerate(rows) if type(r) in bad_rows)
        raise InputError(f"{relation}: row {i}: expected a tuple of {k} values, got "
                         f"{type(rows[i]).__name__} {rows[i]!r}")
    if set(map(len, rows)) - {k}:
        i = next(i for i, r in enumerate(rows) if len(r) != k)
        raise InputError(f"{relation}: row {i} has {len(rows[i])} values, expected {k}")
    sign_arr = check_signs(relation, np.ones(n, dtype=np.int8) if signs is None else signs, n)
    cols = list(zip(*rows)) if n else [()] * k
    out = []
    for j, (t, vals) in enumerate(zip(types, cols)):
        try:
            out.append(_python_column(t, list(vals)))
        except _BadValue as e:
            raise InputError(f"{_where(relation, names, j)}: row {e.index}: {e.message}") from None
    return Batch(relation, sign_arr, tuple(out))


class _BadValue(Exception):
    def __init__(self, index: int, message: str):
        self.index, self.message = index, message


def _first_bad_type(t, vals) -> None:
    ok = _TYPE_OK[t]
    bad = {ty for ty in set(map(type, vals)) if not ok(ty)}
    if bad:
        i = next(i for i, v in enumerate(vals) if type(v) in bad)
        raise _BadValue(i, f"expected {_WANT[t]}, got {type(vals[i]).__name__} {vals[i]!r}")


def _python_column(t, vals: list):
    _first_bad_type(t, vals)
    if t == STRING:
        return pa.array(vals, type=pa.string())
    if t == DATE:
        out = np.empty(len(vals), dtype=np.int64)
        for i, v in enumerate(vals):     # Python rows: one conversion per value is the input's cost
            try:
                out[i] = date_value(v)
            except ValueError as e:
                raise _BadValue(i, str(e)) from None
        return out
    try:
        return np.array(vals, dtype=NUMPY_DTYPES[t]) if vals else np.empty(0, NUMPY_DTYPES[t])
    except OverflowError:
        i = next(i for i, v in enumerate(vals) if isinstance(v, int) and not -2**63 <= v < 2**63)
        raise _BadValue(i, f"{vals[i]} is out of the 64-bit range") from None


def check_signs(relation: str, signs, n: int) -> np.ndarray:
    s = np.asarray(signs)
    if s.dtype == object:
        _first_bad_type(INT, s.tolist())
        s = np.array(s.tolist(), dtype=np.int64)
    if s.ndim != 1 or len(s) != n:
        raise InputError(f"{relation}: {len(s)} signs for {n} rows")
    if not (np.issubdtype(s.dtype, np.integer) and s.dtype != np.bool_):
        raise InputError(f"{relation}: signs must be integers +1 or -1, got a {s.dtype} array")
    if len(s) and s.min() >= -1 and s.max() <= 1 and np.count_nonzero(s) == len(s):
        return s.astype(np.int8, copy=False)      # the usual batch: three reductions, no temporaries
    bad = np.flatnonzero((s != 1) & (s != -1))
    if len(bad):
        raise InputError(f"{relation}: row {bad[0]}: sign {s[bad[0]]} (must be +1 or -1)")
    return s.astype(np.int8, copy=False)


# ----------------------------------------------------------------------------- columns
def canonical_batch(decl, batch: Batch, needed=None) -> Batch:
    """Check `batch` against decl (arity, signs, each column's type) and return it with
    canonical columns. `needed[j]` False allows column j to be absent (None)."""
    if not isinstance(batch, Batch):
        raise InputError(f"{decl.name}: expected a Batch, got {type(batch).__name__}")
    if len(batch.columns) != len(decl.columns):
        raise InputError(f"{decl.name} has {len(decl.columns)} columns, batch has {len(batch.columns)}")
    n = len(batch.signs)
    if batch.checked:
        as_is = _checked_as_is(decl, batch, needed, n)
        if as_is is not None:
            return as_is
    signs = check_signs(decl.name, batch.signs, n)
    if decl.kind == "table" and np.any(signs < 0):
        raise InputError(f"deletions from TABLE {decl.name} are not allowed (tables are static)")
    cols = []
    for j, (col, c) in enumerate(zip(batch.columns, decl.columns)):
        where = f"{decl.name}.{c.name}"
        if col is None:
            if needed is None or needed[j]:
                raise InputError(f"{where}: column missing from the batch")
            cols.append(None)
            continue
        if len(col) != n:
            raise InputError(f"{where}: column length {len(col)} differs from the batch length {n}")
        cols.append(_canonical_column(where, c.type, col))
    return Batch(batch.relation, signs, tuple(cols))


def nonfinite_mask(column, values: np.ndarray) -> np.ndarray:
    """Where a FLOAT column's values are refused: NaN always, infinities in a `finite` column."""
    return ~np.isfinite(values) if column.finite else np.isnan(values)


def nonfinite_reason(v: float) -> str:
    if v != v:
        return ("NaN is not supported as an input value (toaster compares and groups floats as "
                "IEEE 754 does; DuckDB orders NaN above every number)")
    return ("an infinity cannot be taken back from the incremental sums this column's values "
            "reach (a NaN would be left)")


def check_nonfinite(decl, batch: Batch) -> None:
    """Refuse NaN in every FLOAT column of a canonical batch, and an infinity in its `finite`
    columns: vectorized, one pass per FLOAT column."""
    for j, c in enumerate(decl.columns):
        col = batch.columns[j]
        if c.type != FLOAT or c.flag_of is not None or not isinstance(col, np.ndarray):
            continue
        bad = nonfinite_mask(c, col)
        if bad.any():
            i = int(np.argmax(bad))
            v = float(col[i])
            raise InputError(f"{decl.name}.{c.name}: {v} in row {i + 1} of the batch: {nonfinite_reason(v)}")


CANONICAL_DTYPES = {INT: np.dtype(np.int64), DATE: np.dtype(np.int64), FLOAT: np.dtype(np.float64),
                     BOOL: np.dtype(np.bool_)}


def canonical_string_column(col, n: int) -> bool:
    """An Arrow string (or dictionary-of-string) column of n values without nulls: what the
    engines take as it is."""
    return (isinstance(col, (pa.Array, pa.ChunkedArray)) and len(col) == n and col.null_count == 0
            and (pa.types.is_string(col.type) or (pa.types.is_dictionary(col.type)
                                                 and pa.types.is_string(col.type.value_type))))


def _checked_as_is(decl, batch: Batch, needed, n: int) -> Batch | None:
    """A reader's checked batch whose columns are all canonical, as it is (O(columns) checks);
    None if anything is off (the full check then runs)."""
    s = batch.signs
    if not (isinstance(s, np.ndarray) and s.dtype == np.int8 and s.ndim == 1):
        return None
    if decl.kind == "table" and len(s) and s.min() < 0:
        return None
    for j, (col, c) in enumerate(zip(batch.columns, decl.columns)):
        if needed is not None and not needed[j]:
            continue        # never read: the reader checked it, nothing converts it
        if col is None:
            return None
        elif c.type == STRING:
            if not canonical_string_column(col, n):
                return None
        elif not (isinstance(col, np.ndarray) and col.dtype == CANONICAL_DTYPES[c.type] and col.shape == (n,)):
            return None
    return Batch(batch.relation, s, batch.columns)


def _canonical_column(where: str, t, col):
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        return _arrow_column(where, t, col)
    if hasattr(col, "to_numpy") and not isinstance(col, np.ndarray):     # pandas Series
        col = col.to_numpy()
    arr = np.asarray(col)
    if t == STRING:
        if arr.dtype.kind == "U":
            return pa.array(arr, type=pa.string())
        if arr.dtype != object:
            raise InputError(f"{where}: expected strings, got a {arr.dtype} column")
        vals = arr.tolist()
        try:
            _first_bad_type(STRING, vals)
        except _BadValue as e:
            raise InputError(f"{where}: row {e.index}: {e.message}") from None
        return pa.array(vals, type=pa.string())
    if arr.dtype == object:         # Python values in an object array: checked one by one
        try:
            return _python_column(t, arr.tolist())
        except _BadValue as e:
            raise InputError(f"{where}: row {e.index}: {e.message}") from None
    return _numeric_column(where, t, arr)


def _numeric_column(where: str, t, arr: np.ndarray) -> np.ndarray:
    kind = arr.dtype.kind
    if t == BOOL:
        if kind != "b":
            raise InputError(f"{where}: expected a bool column, got {arr.dtype}")
        return arr
    if t == DATE and kind == "M":
        if np.isnat(arr).any():
            raise InputError(f"{where}: row {np.flatnonzero(np.isnat(arr))[0]}: NaT is not a date")
        if arr.dtype != np.dtype("datetime64[D]"):
            raise InputError(f"{where}: expected dates, got {arr.dtype} (convert to datetime64[D] first)")
        out = days_to_yyyymmdd(arr)
        bad = np.flatnonzero(~yyyymmdd_ok(out))
        if len(bad):
            raise InputError(f"{where}: row {bad[0]}: date {arr[bad[0]]} is outside years 1-9999")
        return out
    if t == FLOAT:
        if kind not in "fiu":
            raise InputError(f"{where}: expected a float column, got {arr.dtype}")
        return arr.astype(np.float64, copy=False)
    if kind not in "iu":       # INT and DATE (YYYYMMDD)
        raise InputError(f"{where}: expected an int64 column, got {arr.dtype}")
    if kind == "u" and arr.dtype.itemsize == 8 and len(arr) and arr.max() >= 2**63:
        i = int(np.argmax(arr >= 2**63))
        raise InputError(f"{where}: row {i}: {arr[i]} is out of the 64-bit range")
    out = arr.astype(np.int64, copy=False)
    if t == DATE:
        bad = np.flatnonzero(~yyyymmdd_ok(out))
        if len(bad):
            raise InputError(f"{where}: row {bad[0]}: not a calendar date: {out[bad[0]]} (expected YYYYMMDD)")
    return out


def _arrow_column(where: str, t, col):
    if col.null_count:
        nulls = col.is_null()
        mask = nulls.to_numpy(zero_copy_only=False) if isinstance(nulls, pa.Array) else \
            np.concatenate([c.to_numpy(zero_copy_only=False) for c in nulls.chunks])
        raise InputError(f"{where}: row {np.flatnonzero(mask)[0]}: null value")
    ty = col.type
    if t == STRING:
        if pa.types.is_string(ty) or pa.types.is_large_string(ty) or \
                (pa.types.is_dictionary(ty) and pa.types.is_string(ty.value_type)):
            return col
        raise InputError(f"{where}: expected strings, got an Arrow {ty} column")
    if t == DATE and pa.types.is_date32(ty):     # date32 -> datetime64 needs a copy
        return days_to_yyyymmdd(col.to_numpy(zero_copy_only=False) if isinstance(col, pa.Array) else col.to_numpy())
    if t == STRING or pa.types.is_dictionary(ty) or not (pa.types.is_integer(ty) or pa.types.is_floating(ty)
                                                        or pa.types.is_boolean(ty)):
        raise InputError(f"{where}: expected {_WANT[t][2:]} values, got an Arrow {ty} column")
    return _numeric_column(where, t, col.to_numpy(zero_copy_only=False))
