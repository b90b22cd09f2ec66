"""The function registry (toaster/functions.py) on every engine: each registered SQL function,
on generated arguments (with 0, negatives, overflow and coincident points), through a query on
calc, interp, imp and llvm (tuple mode), compared with DuckDB; NaN equals NaN.

Each row has its own ID and the stream only inserts, so every group holds one function value
(an inf or nan is never cancelled by a later delete, which the engines need not maintain).
"""
from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toaster.errors import UnsupportedError
from toaster.functions import FUNCTIONS, call, cast, divide
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import check_compilation
from toaster.types import DATE, FLOAT, INT, STRING

BACKENDS = ("calc", "interp", "imp", "llvm")
SCHEMA = ("CREATE STREAM R(ID int, " + ", ".join(f"X{i} float" for i in range(1, 13)) +
          ", N1 int, N2 int, N3 int, S string, DS string, D date);")
TYPES = (INT,) + (FLOAT,) * 12 + (INT, INT, INT, STRING, STRING, DATE)

# argument lists per function (column names of R, or SQL literals); every SQL function of the
# registry must appear here (test_every_function_is_tested)
X = [f"R.X{i}" for i in range(1, 13)]
CALLS = {
    "listmin": [["R.X1", "R.X2"], ["R.N1", "R.N2", "R.N3"], ["R.N1", "R.X1"]],
    "listmax": [["R.X1", "R.X2"], ["R.N1", "R.N2", "R.N3"], ["R.N1", "R.X1"]],
    "date_part": [["'year'", "R.D"], ["'month'", "R.D"], ["'day'", "R.D"]],
    "regexp_match": [["'^a'", "R.S"], ["'b.'", "R.S"]],
    "substring": [["R.S", "1", "2"], ["R.S", "0", "10"]],
    "cast_int": [["R.X1"], ["R.S"], ["R.D"], ["R.N1"]],
    "cast_float": [["R.N1"], ["R.D"], ["R.X1"]],
    "cast_string": [["R.N1"], ["R.S"], ["R.D"]],
    "cast_date": [["R.DS"], ["R.D"]],
    "abs": [["R.X1"], ["R.N1"]], "floor": [["R.X1"], ["R.N1"]], "ceil": [["R.X1"], ["R.N1"]],
    "vec_length": [X[:3]], "vector_angle": [X[:6]], "dihedral_angle": [X[:12]],
    "atan2": [X[:2]], "pow": [X[:2], ["R.N1", "R.N2"]],
    "hash": [["R.N1"], ["R.X1"], ["R.S"], ["R.D"]],
}
for _f in FUNCTIONS:
    if _f.sql and _f.name not in CALLS:     # the one-argument math functions
        CALLS[_f.name] = [["R.X1"], ["R.N1"]]
NO_ORACLE = {"hash"}                         # its value depends on the runtime: engines agree
# a new string from a number or date: the string dictionary lives in Python
LLVM_REFUSES = {("cast_string", "R.N1"), ("cast_string", "R.D")}

# small values, so the formulas are exact in both evaluation orders, plus 0, negatives and
# overflow (exp(710) and pow(710, 710) are inf, ln(0) is -inf, sqrt(-1) and acos(2) are nan)
FLOATS = st.sampled_from([0.0, 1.0, -1.0, 2.0, -2.5, 0.5, 3.0, 710.0])
COORDS = st.sampled_from([0.0, 1.0, -1.0])   # coincident points come up often
STRINGS = st.sampled_from(["", "a", "abc", "bz", " -7x", "42", "ba"])
DATES = st.sampled_from([19970304, 20001231, 19691120])
DATE_TEXT = {19970304: "1997-03-04", 20001231: "2000-12-31", 19691120: "1969-11-20"}


def _row(i, xs, coords, ns, s, d):
    xs = list(coords) if coords is not None else list(xs)
    return (i,) + tuple(xs) + tuple(ns) + (s, DATE_TEXT[d], d)


EDGE_ROWS = [
    _row(1, [0.0] * 12, None, (0, 0, 0), "", 19970304),                         # all zero: coincident
    _row(2, [-1.0, 0.0] * 6, None, (-3, 2, -1), "abc", 20001231),
    _row(3, [710.0, 710.0, 2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0], None, (5, -7, 0), "bz", 19691120),
    _row(4, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0], None, (1, 1, 1), " -7x", 19970304),
]


@st.composite
def rows(draw):
    n = draw(st.integers(1, 5))
    out = []
    for i in range(n):
        coincident = draw(st.booleans())
        coords = None
        if coincident:      # some of the four points equal
            pts = [tuple(draw(COORDS) for _ in range(3)) for _ in range(2)]
            coords = [c for j in range(4) for c in pts[draw(st.integers(0, 1)) if j else 0]]
        out.append(_row(10 + i, [draw(FLOATS) for _ in range(12)], coords,
                        [draw(st.integers(-3, 3)) for _ in range(3)], draw(STRINGS), draw(DATES)))
    return out


def _sql(name: str, args: list) -> str:
    f = FUNCTIONS.get(name)
    call_sql = f"{name}({', '.join(args)})"
    # result type from the registry's own type rule, with R's column types
    types = [TYPES[_column(a)] if a.startswith("R.") else (STRING if a.startswith("'") else INT) for a in args]
    if f.result(types) in (STRING, DATE):
        return f"{SCHEMA}\nSELECT R.ID, {call_sql} AS v FROM R;"
    return f"{SCHEMA}\nSELECT R.ID, SUM({call_sql}) AS v FROM R GROUP BY R.ID;"


def _column(ref: str) -> int:
    names = ["ID"] + [f"X{i}" for i in range(1, 13)] + ["N1", "N2", "N3", "S", "DS", "D"]
    return names.index(ref[2:])


CASES = [(name, tuple(args)) for name in sorted(CALLS) for args in CALLS[name]]
_COMPILED: dict = {}


def compiled(name, args):
    key = (name, args)
    if key not in _COMPILED:
        _COMPILED[key] = compile_sql(_sql(name, list(args)), mode="tuple")
    return _COMPILED[key]


def _batch(rows_):
    return [Batch.from_rows("R", TYPES, rows_)]


def test_every_function_is_tested():
    assert {f.name for f in FUNCTIONS if f.sql} <= set(CALLS)


@pytest.mark.parametrize("name, args", [c for c in CASES if c[0] not in NO_ORACLE], ids=lambda v: str(v))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=rows())
def test_function_on_every_engine_matches_duckdb(name, args, extra):
    comp = compiled(name, args)
    for backend in BACKENDS:
        if backend == "llvm" and (name, args[0]) in LLVM_REFUSES:
            with pytest.raises(UnsupportedError, match=re.escape(f"function {name}()")):
                check_compilation(comp, backend, _batch(EDGE_ROWS + extra))
            continue
        report = check_compilation(comp, backend, _batch(EDGE_ROWS + extra))
        assert report.rows_checked >= len(EDGE_ROWS)


@pytest.mark.parametrize("args", CALLS["hash"], ids=str)
def test_hash_agrees_on_every_engine(args):
    comp = compiled("hash", tuple(args))
    results = {}
    for backend in BACKENDS:
        engine = comp.engine(backend)
        try:
            engine.apply(_batch(EDGE_ROWS)[0])
            (res,) = engine.results()
            results[backend] = sorted(res.rows)
        finally:
            engine.close()
    assert len(results["calc"]) >= len(EDGE_ROWS) - 1     # hash(0) is 0: that group is dropped
    for backend, got in results.items():
        assert got == results["calc"], backend


# ------------------------------------------------------------------ IEEE semantics, directly

def test_ieee_division_and_casts():
    assert divide(1, 0) == math.inf and divide(-1, 0) == -math.inf
    assert divide(1.0, -0.0) == -math.inf and divide(-1.0, -0.0) == math.inf
    assert math.isnan(divide(0, 0)) and math.isnan(divide(math.nan, 0))
    assert cast(math.nan, INT) == 0 and cast(1e300, INT) == 2 ** 63 - 1 and cast(-1e300, INT) == -2 ** 63
    assert cast(-2.7, INT) == -2 and cast(3, FLOAT) == 3.0


@pytest.mark.parametrize("name, args", [("sqrt", (-1,)), ("acos", (2,)), ("asin", (-2,)), ("ln", (-1,)),
                                        ("log", (-1,)), ("pow", (-8, 1 / 3)), ("cos", (math.inf,)),
                                        ("vector_angle", (0, 0, 0, 1, 1, 1)), ("floor", (math.nan,))])
def test_domain_errors_are_nan(name, args):
    assert math.isnan(call(name, args))


@pytest.mark.parametrize("name, args, want", [("ln", (0,), -math.inf), ("exp", (1000,), math.inf),
                                              ("pow", (0, -1), math.inf), ("pow", (10, 400), math.inf),
                                              ("dihedral_angle", (0,) * 12, 0.0),
                                              ("dihedral_angle", (1, 1, 1) * 2 + (0, 1, 0, 1, 1, 0), 0.0)])
def test_overflow_and_coincident_points(name, args, want):
    assert call(name, args) == want


def test_llvm_math_resolves_every_symbol():
    """The optimized module calls only libm symbols the JIT has bound (an unresolved one would
    abort the process), checked in a child process so a failure cannot take pytest down."""
    code = (
        "from toaster.pipeline import compile_sql\n"
        "from toaster.backends.llvm.natives import register_libm_symbols, check_registry\n"
        "check_registry()\n"
        "sql = '''CREATE STREAM R(A float, B float);\n"
        "SELECT SUM(cos(R.A) + sin(R.A) + tan(R.A) + acos(R.A) + asin(R.A) + atan(R.A) + atan2(R.A, R.B) + "
        "sqrt(R.A) + exp(R.A) + ln(R.A) + log(R.A) + pow(R.A, R.B) + pow(2, R.B) + pow(R.A, 2) + radians(R.A) "
        "+ degrees(R.A) + vec_length(R.A, R.B, 1) + vector_angle(R.A, R.B, 1, 2, R.A, 0) + dihedral_angle("
        "R.A, 0, 1, R.B, 1, 0, 0, 0, R.A, 1, R.B, 1) + floor(R.A) + ceil(R.B) + abs(R.A)) FROM R;'''\n"
        "comp = compile_sql(sql, mode='tuple')\n"
        "e = comp.engine('llvm')\n"
        "bound = register_libm_symbols()\n"
        "import re\n"
        "calls = set(re.findall(r'declare [^@]*@\"?([A-Za-z_.0-9]+)', e.optimized_ir))\n"
        "from toaster.backends.llvm.jit import Runtime, FEED_EXTERNAL  # libc symbols the engine binds\n"
        "extern = {c for c in calls if not c.startswith('llvm.')} - set(Runtime.NAMES + FEED_EXTERNAL)\n"
        "assert extern <= set(bound), extern - set(bound)\n"
        "from toaster.runtime.batch import Batch\n"
        "from toaster.types import FLOAT\n"
        "e.apply(Batch.from_rows('R', (FLOAT, FLOAT), [(0.5, 2.0), (-1.0, 0.0)]))\n"
        "print('ok', sorted(extern))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr[-2000:]
