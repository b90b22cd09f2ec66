"""The one registry of the dialect's scalar functions (DIALECT.md §4), and the scalar semantics
(division, casts, comparisons) that every Python evaluator shares.

Each function is declared ONCE, with everything each stage needs:

| field     | used by                                                                          |
|-----------|----------------------------------------------------------------------------------|
| arity, result | frontend typing (`result(arg_types)` gives a Type or a one-line error)       |
| python    | calculus evaluator, result terms, K3 / imperative interpreters, Spark workers,   |
|           | the LLVM string tables (per distinct string)                                     |
| formula   | a definition over a math namespace `m` (m.add, m.sqrt, m.atan2, ...): run with   |
|           | Python floats it is `python`, run with the LLVM namespace it is the native code  |
| duckdb    | the oracle: a DuckDB function name (numeric arguments cast to DOUBLE when the    |
|           | function is FLOAT-valued) or a template `(args_sql, arg_types) -> sql`           |
| native    | LLVM: an intrinsic (`llvm.cos.f64`, lowered to the libm symbol that              |
|           | backends/llvm/natives.py registers with the JIT) or the name of an IR builder in |
|           | that module; None: only through the string tables (a string argument) or refused |

Semantics are IEEE/libm wherever numbers are concerned, never a Python exception:
  * x/0 is +-inf by the signs of x and 0 (IEEE 754), 0/0 and nan/0 are nan;
  * sqrt(-1), acos(2), ln(-1) are nan; ln(0) is -inf; exp and pow overflow to inf (libm);
  * casts from FLOAT to INT truncate toward zero and saturate at the i64 range; nan gives 0
    (LLVM's fptosi.sat, so native code computes the same);
  * log is the base-10 logarithm and ln the natural one (standard SQL and DuckDB);
  * floor, ceil and abs keep their argument's type (an INT stays an INT; floor(nan) is nan);
  * vector_angle is acos(u.v / (|u| |v|)) clamped into [-1, 1] (nan, e.g. for a zero vector,
    stays nan); dihedral_angle(p1..p4) is the signed torsion angle
        atan2(|b2| * b1.(b2 x b3), (b1 x b2).(b2 x b3)),  b1 = p2-p1, b2 = p3-p2, b3 = p4-p3
    in radians, in (-pi, pi], with no division, so coincident points give atan2(0, +0) = 0;
  * hash(x) is the splitmix64 finalizer of x's 64 bits (a float's IEEE bits with -0.0 as 0.0,
    a string's CRC-32), as a signed i64. DuckDB has no counterpart, so the oracle refuses it;
  * regexp_match(pattern, s) is an UNANCHORED search (POSIX regexec): 1 if the pattern matches
    anywhere in s, else 0. cast_int of a string parses a leading integer like atoi (no digits:
    0); of a date gives YYYYMMDD. cast_string of a float is Python's repr ('2.5'), of a date
    'YYYY-MM-DD'. substring has a 0-based start.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Callable

from toaster.errors import UnsupportedError
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, Type, date_to_int, int_to_date, promote

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1


# ------------------------------------------------------------------ division, casts, comparisons

def divide(a, b) -> float:
    """IEEE division of two numbers: x/0 is +-inf (the sign of x times the sign of the zero),
    0/0 and nan/0 are nan. Always a float."""
    a, b = float(a), float(b)
    try:
        v = a / b
        return math.nan if v != v else v          # inf / inf
    except ZeroDivisionError:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def float_to_int(x: float) -> int:
    """Truncation toward zero, saturating at the i64 range, nan -> 0 (LLVM's fptosi.sat)."""
    if x != x:
        return 0
    if x >= 2.0 ** 63:
        return I64_MAX
    if x < -2.0 ** 63:
        return I64_MIN
    return int(x)


def cast(value, t: Type | str):
    """Convert a value to the representation of type t (numbers and bools; others unchanged)."""
    t = Type(t) if isinstance(t, str) else t
    if t == FLOAT:
        return float(value)
    if t in (INT, DATE):
        return float_to_int(value) if isinstance(value, float) else int(value)
    if t == BOOL:
        return bool(value)
    return value


COMPARISONS: dict[str, Callable] = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
                                    ">": operator.gt, ">=": operator.ge}


def compare(op: str, a, b) -> bool:
    """SQL comparison of two values of comparable types (nan equals nothing, as in IEEE)."""
    return COMPARISONS[op](a, b)


# ------------------------------------------------------------------------ libm in Python

_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or None)


def _libm(name: str, arity: int = 1) -> Callable:
    """A libm function: Python's math module, which is libm but raises where libm returns
    nan or inf; then the C function itself, so the value is exactly native code's."""
    py = getattr(math, name)
    c = getattr(_LIBM, name)
    c.restype, c.argtypes = ctypes.c_double, [ctypes.c_double] * arity

    def fn(*args):
        try:
            return py(*args)
        except (ValueError, OverflowError):
            v = c(*map(float, args))
            return math.nan if v != v else v      # one NaN object: Python dict keys match by identity
    fn.__name__ = name
    return fn


class PyMath:
    """The formulas' arithmetic on Python floats (the LLVM backend has the same namespace over IR)."""
    add, sub, mul = staticmethod(operator.add), staticmethod(operator.sub), staticmethod(operator.mul)
    div = staticmethod(divide)
    sqrt, acos, atan2 = staticmethod(_libm("sqrt")), staticmethod(_libm("acos")), staticmethod(_libm("atan2", 2))

    @staticmethod
    def const(v: float) -> float:
        return float(v)

    @staticmethod
    def float(x) -> float:
        return float(x)

    @staticmethod
    def clamp(x, lo: float, hi: float):
        """x within [lo, hi]; nan stays nan."""
        return hi if x > hi else lo if x < lo else x

    @staticmethod
    def where_finite(x, a, b):
        return a if math.isfinite(x) else b

    @staticmethod
    def where_nan(x, a, b):
        return a if x != x else b

    @staticmethod
    def where_greater(x, y, a, b):
        """a if x > y (IEEE: false on nan) else b."""
        return a if x > y else b


# --------------------------------------------------------------------------- the registry

Template = Callable[[list, list], str]


@dataclass(frozen=True)
class Function:
    name: str                                  # lower-case
    min_args: int
    max_args: int | None                       # None: unbounded
    result: Callable[[list], "Type | str"]     # arg types -> result type, or an error message
    python: Callable                           # the values of the arguments -> the value
    duckdb: str | Template | None              # None: the oracle refuses it
    native: str | None = None                  # an llvm intrinsic or a builder of natives.py
    formula: Callable | None = None            # (m, *args) over a math namespace
    sql: bool = True                           # callable from SQL (False: internal, like LIKE)
    reads_maps: bool = False                   # python(maps, *args): reads the engine's maps (range indexes)

    def call(self, args, maps=None):
        return self.python(maps, *args) if self.reads_maps else self.python(*args)


@dataclass
class Registry:
    functions: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)

    def declare(self, name: str, args: int | tuple, result, python=None, duckdb=None, native=None,
                formula=None, aliases=(), sql=True, reads_maps=False) -> Function:
        lo, hi = (args, args) if isinstance(args, int) else args
        if python is None:
            python = _formula_in_python(formula)
        f = Function(name, lo, hi, result, python, duckdb, native, formula, sql, reads_maps)
        self.functions[name] = f
        for a in aliases:
            self.aliases[a] = name
        return f

    def get(self, name: str) -> Function | None:
        name = name.lower()
        return self.functions.get(self.aliases.get(name, name))

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __iter__(self):
        return iter(self.functions.values())

    def lookup(self, name: str) -> Function:
        f = self.get(name)
        if f is None:
            raise UnsupportedError(f"function {name} (no implementation registered)")
        return f

    def call(self, name: str, args, maps=None):
        """Apply a function to argument values (the semantics every Python evaluator uses);
        `maps` (name -> {keys: value}) for the functions that read maps."""
        return self.lookup(name).call(args, maps)


FUNCTIONS = Registry()


def call(name: str, args, t: Type | str | None = None, maps=None):
    """A registered function's value; converted to the call's result type t when given."""
    v = FUNCTIONS.call(name, args, maps)
    return v if t is None else cast(v, Type(t) if isinstance(t, str) else t)


def register_external(name: str, fn: Callable, result: Type = FLOAT) -> None:
    """Make `fn` callable as a function declared AS EXTERNAL 'name' (Python engines; the
    LLVM backend refuses it by name, the oracle calls DuckDB's function of that name)."""
    FUNCTIONS.declare(name.lower(), (0, None), lambda _types: result, python=fn, duckdb=name.lower())


def _formula_in_python(formula):
    def fn(*args):
        v = formula(PyMath, *map(float, args))
        return math.nan if v != v else v
    return fn


# ------------------------------------------------------------------------ result types

def _types(ts) -> str:
    return ", ".join(map(str, ts))


def _numbers(name: str, returns: Type | None = None):
    """All arguments numeric; the result is `returns`, or the argument's type when None."""
    def rule(ts):
        for i, t in enumerate(ts, start=1):
            if not t.is_numeric:
                return f"{name} needs numbers, got {t} as argument {i}"
        return returns or ts[0]
    return rule


def _list_type(name):
    def rule(ts):
        if all(t.is_numeric for t in ts):
            t = ts[0]
            for u in ts[1:]:
                t = promote(t, u)
            return t
        if len(set(ts)) == 1:
            return ts[0]
        return f"{name} needs arguments of one type, got {_types(ts)}"
    return rule


def _fixed(name, want: tuple, returns: Type, shape: str):
    def rule(ts):
        return returns if tuple(ts) == want else f"{name} needs {shape}, got ({_types(ts)})"
    return rule


def _cast_date_type(ts):
    return DATE if ts[0] in (STRING, DATE) else f"cast_date needs a string, got {ts[0]}"


# ------------------------------------------------------------------------ Python semantics

def _date_part(part, d) -> int:
    part, d = str(part).lower(), int(d)
    if part == "year":
        return d // 10000
    if part == "month":
        return d // 100 % 100
    if part == "day":
        return d % 100
    raise UnsupportedError(f"date_part {part!r}")


def _regexp_match(pattern, s) -> int:
    return 1 if re.search(pattern, s) else 0       # unanchored, as POSIX regexec(3)


def like(s: str, pattern: str) -> int:
    """SQL LIKE: % any run, _ one character, whole string, case-sensitive."""
    rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return 1 if re.fullmatch(rx, s, flags=re.DOTALL) else 0


def _substring(s, start, length) -> str:
    start, length = int(start), int(length)
    return s[start:start + length] if length > 0 else ""


def _cast_int(x) -> int:
    if isinstance(x, str):
        m = re.match(r"\s*[+-]?\d+", x)
        return int(m.group()) if m else 0
    return cast(x, INT)


def _cast_string(x, type_name=None) -> str:
    if type_name == "date":      # calculus passes a date's type along (from_sql.py)
        return int_to_date(x)
    return repr(x) if isinstance(x, float) else str(x)


def _cast_date(x) -> int:
    return x if isinstance(x, int) else date_to_int(x)


def _round_down(name):
    fn = getattr(math, name)

    def f(x):
        if isinstance(x, int) or x != x or x in (math.inf, -math.inf):
            return x
        return float(fn(x))
    return f


def _abs(x):
    return abs(x)


def mix64(z: int) -> int:
    """splitmix64's finalizer on 64 bits, as a signed i64."""
    z &= 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z - (1 << 64) if z >= 1 << 63 else z


def _hash(x) -> int:
    if isinstance(x, str):
        return mix64(zlib.crc32(x.encode("utf-8")))
    if isinstance(x, float):
        return mix64(struct.unpack("<q", struct.pack("<d", x + 0.0 if x == 0 else x))[0])
    return mix64(int(x))


# ---------------------------------------------------------------------------- formulas

def _dot(m, u, v):
    return m.add(m.add(m.mul(u[0], v[0]), m.mul(u[1], v[1])), m.mul(u[2], v[2]))


def _cross(m, u, v):
    return (m.sub(m.mul(u[1], v[2]), m.mul(u[2], v[1])), m.sub(m.mul(u[2], v[0]), m.mul(u[0], v[2])),
            m.sub(m.mul(u[0], v[1]), m.mul(u[1], v[0])))


def _vec_length(m, x, y, z):
    return m.sqrt(_dot(m, (x, y, z), (x, y, z)))


def _vector_angle(m, x1, y1, z1, x2, y2, z2):
    u, v = (x1, y1, z1), (x2, y2, z2)
    c = m.div(_dot(m, u, v), m.mul(m.sqrt(_dot(m, u, u)), m.sqrt(_dot(m, v, v))))
    return m.acos(m.clamp(c, -1.0, 1.0))


def _dihedral_angle(m, *xs):
    p = [xs[3 * i:3 * i + 3] for i in range(4)]
    b1, b2, b3 = ([m.sub(p[i + 1][k], p[i][k]) for k in range(3)] for i in range(3))
    n1, n2 = _cross(m, b1, b2), _cross(m, b2, b3)
    # + 0.0 turns a -0.0 into 0.0: with coincident points the angle is atan2(0, 0) = 0, not pi
    return m.atan2(m.mul(m.sqrt(_dot(m, b2, b2)), _dot(m, b1, n2)), m.add(_dot(m, n1, n2), m.const(0.0)))


def _radians(m, x):
    return m.mul(x, m.const(math.pi / 180.0))


def _degrees(m, x):
    return m.mul(x, m.const(180.0 / math.pi))


# ------------------------------------------------------------------ DuckDB templates (oracle)

def _dbl(x: str) -> str:
    return f"CAST({x} AS DOUBLE)"


def _duck_dot(u, v) -> str:
    return "(" + " + ".join(f"{a} * {b}" for a, b in zip(u, v)) + ")"


def _duck_cross(u, v) -> list:
    return [f"({u[1]} * {v[2]} - {u[2]} * {v[1]})", f"({u[2]} * {v[0]} - {u[0]} * {v[2]})",
            f"({u[0]} * {v[1]} - {u[1]} * {v[0]})"]


def _duck_vector_angle(a, _ts):
    u, v = [_dbl(x) for x in a[:3]], [_dbl(x) for x in a[3:]]
    c = f"({_duck_dot(u, v)} / (sqrt({_duck_dot(u, u)}) * sqrt({_duck_dot(v, v)})))"
    # DuckDB orders nan above everything: keep it nan before clamping
    return f"acos(CASE WHEN isnan({c}) THEN {c} WHEN {c} > 1 THEN 1.0 WHEN {c} < -1 THEN -1.0 ELSE {c} END)"


def _duck_dihedral(a, _ts):
    p = [[_dbl(a[3 * i + k]) for k in range(3)] for i in range(4)]
    b = [[f"({p[i + 1][k]} - {p[i][k]})" for k in range(3)] for i in range(3)]
    n1, n2 = _duck_cross(b[0], b[1]), _duck_cross(b[1], b[2])
    return f"atan2(sqrt({_duck_dot(b[1], b[1])}) * {_duck_dot(b[0], n2)}, {_duck_dot(n1, n2)} + 0.0)"


def _duck_date_as_int(x: str) -> str:
    return f"(year({x}) * 10000 + month({x}) * 100 + day({x}))"


def _duck_float_to_int(x: str) -> str:
    return (f"CASE WHEN isnan({x}) THEN CAST(0 AS BIGINT) WHEN {x} >= 9223372036854775807.0 THEN "
            f"CAST(9223372036854775807 AS BIGINT) WHEN {x} < -9223372036854775808.0 THEN "
            f"CAST(-9223372036854775808 AS BIGINT) ELSE CAST(trunc({x}) AS BIGINT) END")


def _duck_cast_int(a, ts):
    if ts[0] == FLOAT:
        return _duck_float_to_int(a[0])
    if ts[0] == STRING:
        # atoi-like (no digits: 0), and NULL of NULL
        return (f"CASE WHEN {a[0]} IS NULL THEN NULL ELSE "
                f"COALESCE(TRY_CAST(regexp_extract({a[0]}, '^\\s*([-+]?[0-9]+)', 1) AS BIGINT), 0) END")
    if ts[0] == DATE:
        return _duck_date_as_int(a[0])
    return f"CAST({a[0]} AS BIGINT)"


def _duck_same_type(name):
    """floor / ceil / abs keep their argument's type."""
    def t(a, ts):
        return f"{name}({a[0]})" if ts[0] != FLOAT else f"{name}({_dbl(a[0])})"
    return t


# ---------------------------------------------------------------------------- declarations

D = FUNCTIONS.declare
D("listmin", (2, None), _list_type("listmin"), python=lambda *a: min(a), native="listmin",
  duckdb=lambda a, ts: f"least({', '.join(a)})")
D("listmax", (2, None), _list_type("listmax"), python=lambda *a: max(a), native="listmax",
  duckdb=lambda a, ts: f"greatest({', '.join(a)})")
D("date_part", 2, _fixed("date_part", (STRING, DATE), INT, "('year'|'month'|'day', date)"),
  python=_date_part, native="date_part", duckdb=lambda a, ts: f"CAST(date_part({a[0]}, {a[1]}) AS BIGINT)")
D("regexp_match", 2, _fixed("regexp_match", (STRING, STRING), INT, "(string pattern, string)"),
  python=_regexp_match, duckdb=lambda a, ts: f"CASE WHEN regexp_matches({a[1]}, {a[0]}) THEN 1 ELSE 0 END")
D("substring", 3, _fixed("substring", (STRING, INT, INT), STRING, "(string, int, int)"),
  python=_substring, duckdb=lambda a, ts: f"substring({a[0]}, ({a[1]}) + 1, {a[2]})")
D("like", 2, lambda ts: INT, python=like, sql=False, duckdb=None)
D("cast_int", 1, lambda ts: INT, python=_cast_int, native="cast_int", duckdb=_duck_cast_int)
D("cast_float", 1, lambda ts: FLOAT, python=lambda x: float(x), native="cast_float",
  duckdb=lambda a, ts: _dbl(_duck_date_as_int(a[0]) if ts[0] == DATE else a[0]))
D("cast_string", (1, 2), lambda ts: STRING, python=_cast_string, native="cast_string",
  duckdb=lambda a, ts: f"CAST({a[0]} AS VARCHAR)")
D("cast_date", 1, _cast_date_type, python=_cast_date, native="cast_date",
  duckdb=lambda a, ts: f"CAST({a[0]} AS DATE)")
D("hash", 1, lambda ts: INT, python=_hash, native="hash", duckdb=None)
D("abs", 1, _numbers("abs"), python=_abs, native="abs", duckdb=_duck_same_type("abs"))
D("floor", 1, _numbers("floor"), python=_round_down("floor"), native="floor", duckdb=_duck_same_type("floor"))
D("ceil", 1, _numbers("ceil"), python=_round_down("ceil"), native="ceil", duckdb=_duck_same_type("ceil"),
  aliases=("ceiling",))

# libm functions of doubles: one intrinsic each, lowered by LLVM to the libm symbol
for _name, _py, _arity, _aliases in (
        ("cos", "cos", 1, ()), ("sin", "sin", 1, ()), ("tan", "tan", 1, ()), ("acos", "acos", 1, ()),
        ("asin", "asin", 1, ()), ("atan", "atan", 1, ()), ("atan2", "atan2", 2, ()), ("sqrt", "sqrt", 1, ()),
        ("exp", "exp", 1, ()), ("ln", "log", 1, ()), ("log", "log10", 1, ("log10",)),
        ("pow", "pow", 2, ("power",))):
    D(_name, _arity, _numbers(_name, FLOAT), python=_libm(_py, _arity), native=f"llvm.{_py}.f64",
      duckdb=_name, aliases=_aliases)

D("radians", 1, _numbers("radians", FLOAT), formula=_radians, duckdb="radians")
D("degrees", 1, _numbers("degrees", FLOAT), formula=_degrees, duckdb="degrees")
D("vec_length", 3, _numbers("vec_length", FLOAT), formula=_vec_length,
  duckdb=lambda a, ts: f"sqrt({_duck_dot([_dbl(x) for x in a], [_dbl(x) for x in a])})")
D("vector_angle", 6, _numbers("vector_angle", FLOAT), formula=_vector_angle, duckdb=_duck_vector_angle)
D("dihedral_angle", 12, _numbers("dihedral_angle", FLOAT), formula=_dihedral_angle, duckdb=_duck_dihedral)
del D


def duckdb_sql(f: Function, args: list, arg_types: list) -> str:
    """The oracle's DuckDB expression for a call (args already printed as DuckDB SQL)."""
    if f.duckdb is None:
        raise UnsupportedError(f"{f.name}() in the DuckDB oracle (it has no DuckDB counterpart)")
    if callable(f.duckdb):
        return f.duckdb(args, arg_types)
    if f.result([t for t in arg_types]) == FLOAT:
        args = [_dbl(a) for a in args]
    return f"{f.duckdb}({', '.join(args)})"


# the functions of ordered aggregate indexes (pass m3_range_index; toaster/ordered_index.py):
# internal, and the ones reading an index map get the engine's maps (reads_maps)
def _declare_ordered_index_functions():
    from toaster import ordered_index as ox
    FUNCTIONS.declare("rix_key", 1, lambda ts: INT, python=ox.rix_key, native="rix_key", sql=False)
    FUNCTIONS.declare("rix_node", 2, lambda ts: INT, python=ox.rix_node, native="rix_node", sql=False)
    FUNCTIONS.declare("rix_cut", 2, lambda ts: INT, python=ox.rix_cut, native="rix_cut", sql=False)
    FUNCTIONS.declare("rix_span", 3, lambda ts: INT, python=ox.rix_span, native="rix_span", sql=False)
    FUNCTIONS.declare("rix_bound", (3, None), lambda ts: INT, python=ox.rix_bound, native="rix_bound", sql=False,
                      reads_maps=True)
    # a sum has the index's value type: the pass writes it into the call (Func.type)
    for name in ("rix_sum", "rix_interval"):
        FUNCTIONS.declare(name, (3, None), lambda ts: FLOAT, python=getattr(ox, name), native=name, sql=False,
                          reads_maps=True)


_declare_ordered_index_functions()

# the internal functions of pass nonfinite_sums (infinities and NaN as DuckDB means them)
from toaster import functions_nonfinite  # noqa: E402,F401
