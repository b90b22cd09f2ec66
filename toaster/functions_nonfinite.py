"""The internal functions of pass nonfinite_sums (toaster/frontend/nonfinite.py): a sum split
into its finite part and the counts of its +inf, -inf and NaN values, MIN/MAX with NaN rows apart,
and DuckDB's order of doubles (NaN above every number, NaN = NaN). Formulas over the math
namespace of toaster.functions (Python floats, or LLVM IR in backends/llvm/natives.py)."""
from __future__ import annotations

from toaster.functions import FLOAT, FUNCTIONS, _dbl, _numbers

# a sum split by pass nonfinite_sums (toaster/frontend/nonfinite.py): its finite part and the
# counts of its +inf, -inf and NaN values, each retracted exactly, then combined
_INF = float("inf")


def _finite_part(m, x):
    return m.where_finite(x, x, m.const(0.0))


def _is_posinf(m, x):
    return m.where_greater(x, m.const(1.7976931348623157e308), m.const(1.0), m.const(0.0))


def _is_neginf(m, x):
    return m.where_greater(m.const(-1.7976931348623157e308), x, m.const(1.0), m.const(0.0))


def _is_nan(m, x):
    return m.where_nan(x, m.const(1.0), m.const(0.0))


def _nonfinite_sum(m, finite, pos, neg, nan, count=None):
    """NaN if a NaN was summed or both infinities were, else the infinity summed, else the finite
    sum (the counts are exact integers: > 0.5 is > 0); with a count, the average (0 over no rows)."""
    half, nan_c, inf = m.const(0.5), m.const(float("nan")), m.const(_INF)
    r = finite if count is None else m.where_greater(count, half, m.div(finite, count), m.const(0.0))
    r = m.where_greater(neg, half, m.const(-_INF), r)
    r = m.where_greater(pos, half, m.where_greater(neg, half, nan_c, inf), r)
    return m.where_greater(nan, half, nan_c, r)


def _nan_as(v: float):
    return lambda m, x: m.where_nan(x, m.const(v), x)


def _max_with_nans(m, best, nans):
    """DuckDB's MAX: NaN if some value is NaN (the greatest)."""
    return m.where_greater(nans, m.const(0.5), m.const(float("nan")), best)


def _min_with_nans(m, best, nans, count):
    """DuckDB's MIN: NaN only if every value is NaN."""
    return m.where_greater(m.sub(count, nans), m.const(0.5), best,
                           m.where_greater(nans, m.const(0.5), m.const(float("nan")), best))


# DuckDB's order of doubles (NaN above every number, NaN = NaN) as 1.0 / 0.0
def _total_lt(m, a, b):
    one, zero = m.const(1.0), m.const(0.0)
    return m.where_nan(a, zero, m.where_nan(b, one, m.where_greater(b, a, one, zero)))


def _total_le(m, a, b):
    one, zero = m.const(1.0), m.const(0.0)
    return m.where_nan(b, one, m.where_nan(a, zero, m.where_greater(a, b, zero, one)))


def _total_eq(m, a, b):
    one, zero = m.const(1.0), m.const(0.0)
    both = m.where_greater(a, b, zero, m.where_greater(b, a, zero, one))
    return m.where_nan(a, m.where_nan(b, one, zero), m.where_nan(b, zero, both))


def _duck_cmp(op):
    return lambda a, ts: f"CASE WHEN {_dbl(a[0])} {op} {_dbl(a[1])} THEN 1.0 ELSE 0.0 END"


def _duck_nonfinite_sum(a, _ts):
    f = a[0] if len(a) == 4 else f"CASE WHEN {a[4]} > 0 THEN {a[0]} / {a[4]} ELSE 0.0 END"
    return (f"CASE WHEN {a[3]} > 0 OR ({a[1]} > 0 AND {a[2]} > 0) THEN 'nan'::DOUBLE WHEN {a[1]} > 0 "
            f"THEN 'inf'::DOUBLE WHEN {a[2]} > 0 THEN '-inf'::DOUBLE ELSE {f} END")



D = FUNCTIONS.declare
D("finite_part", 1, _numbers("finite_part", FLOAT), formula=_finite_part, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN isfinite({_dbl(a[0])}) THEN {_dbl(a[0])} ELSE 0.0 END")
D("is_posinf", 1, _numbers("is_posinf", FLOAT), formula=_is_posinf, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN {_dbl(a[0])} = 'inf'::DOUBLE THEN 1.0 ELSE 0.0 END")
D("is_neginf", 1, _numbers("is_neginf", FLOAT), formula=_is_neginf, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN {_dbl(a[0])} = '-inf'::DOUBLE THEN 1.0 ELSE 0.0 END")
D("is_nan", 1, _numbers("is_nan", FLOAT), formula=_is_nan, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN isnan({_dbl(a[0])}) THEN 1.0 ELSE 0.0 END")
D("nonfinite_sum", (4, 5), _numbers("nonfinite_sum", FLOAT), formula=_nonfinite_sum, sql=False,
  duckdb=_duck_nonfinite_sum)
D("nan_as_neginf", 1, _numbers("nan_as_neginf", FLOAT), formula=_nan_as(-_INF), sql=False,
  duckdb=lambda a, ts: f"CASE WHEN isnan({_dbl(a[0])}) THEN '-inf'::DOUBLE ELSE {_dbl(a[0])} END")
D("nan_as_posinf", 1, _numbers("nan_as_posinf", FLOAT), formula=_nan_as(_INF), sql=False,
  duckdb=lambda a, ts: f"CASE WHEN isnan({_dbl(a[0])}) THEN 'inf'::DOUBLE ELSE {_dbl(a[0])} END")
D("max_with_nans", 2, _numbers("max_with_nans", FLOAT), formula=_max_with_nans, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN {a[1]} > 0 THEN 'nan'::DOUBLE ELSE {a[0]} END")
D("min_with_nans", 3, _numbers("min_with_nans", FLOAT), formula=_min_with_nans, sql=False,
  duckdb=lambda a, ts: f"CASE WHEN {a[1]} > 0 AND {a[1]} >= {a[2]} THEN 'nan'::DOUBLE ELSE {a[0]} END")
D("total_lt", 2, _numbers("total_lt", FLOAT), formula=_total_lt, sql=False, duckdb=_duck_cmp("<"))
D("total_le", 2, _numbers("total_le", FLOAT), formula=_total_le, sql=False, duckdb=_duck_cmp("<="))
D("total_eq", 2, _numbers("total_eq", FLOAT), formula=_total_eq, sql=False, duckdb=_duck_cmp("="))
del D
