"""Built-in scalar functions (DIALECT.md §4): signatures for type checking, and reference Python
implementations that pin down their meaning (the evaluator and the DuckDB oracle must agree
with these; see printer.oracle_sql for the DuckDB side).

Decisions on the undocumented points (DIALECT.md §8):
  * regexp_match(pattern, s) is an UNANCHORED search (POSIX regexec semantics): 1 if the pattern
    matches anywhere in s (Python re.search), else 0. Anchor with ^...$ for a full match.
  * cast_int of a float truncates toward zero; of a string parses a leading integer like atoi
    (no digits: 0); of a date gives YYYYMMDD. cast_float of a date gives YYYYMMDD as a float.
  * cast_string of a float uses Python's repr (e.g. '2.5', '2.0'); of a date 'YYYY-MM-DD'.
  * dihedral_angle(p1, p2, p3, p4) is the standard signed torsion angle
        atan2(|b2| * b1 . (b2 x b3), (b1 x b2) . (b2 x b3)),  b1 = p2-p1, b2 = p3-p2, b3 = p4-p3
    in radians, in (-pi, pi].
  * vector_angle is acos(u.v / (|u| |v|)), clamped into [-1, 1] before acos.
  * hash(x) is a stable 64-bit FNV-1a hash of cast_string(x) as a signed int (it has no DuckDB
    counterpart, so oracle_sql refuses it).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from toaster.types import INT, FLOAT, DATE, STRING, Type, promote, int_to_date, date_to_int


@dataclass(frozen=True)
class Builtin:
    name: str                  # lower-case
    min_args: int
    max_args: int | None       # None: unbounded
    impl: Callable             # Python reference implementation over runtime values


def _cast_int(x):
    if isinstance(x, str):
        m = re.match(r"\s*([-+]?\d+)", x)
        return int(m.group(1)) if m else 0
    return int(x)          # float: truncates toward zero; int and date (YYYYMMDD) unchanged


def _cast_float(x):
    return float(x)        # strings are parsed (ValueError on garbage is a runtime error)


def _cast_string(x, arg_type: Type | None = None):
    if arg_type == DATE:
        return int_to_date(x)
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _cast_date(x, arg_type: Type | None = None):
    if arg_type == DATE:
        return x
    return date_to_int(str(x))


def _date_part(part: str, d: int) -> int:
    return {"year": d // 10000, "month": d // 100 % 100, "day": d % 100}[part.lower()]


def _vec_length(x, y, z):
    return math.sqrt(x * x + y * y + z * z)


def _vector_angle(x1, y1, z1, x2, y2, z2):
    dot = x1 * x2 + y1 * y2 + z1 * z2
    c = dot / (_vec_length(x1, y1, z1) * _vec_length(x2, y2, z2))
    return math.acos(max(-1.0, min(1.0, c)))


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _dihedral_angle(*c):
    p = [c[0:3], c[3:6], c[6:9], c[9:12]]
    b1, b2, b3 = ([p[i + 1][k] - p[i][k] for k in range(3)] for i in range(3))
    n1, n2 = _cross(b1, b2), _cross(b2, b3)
    return math.atan2(math.sqrt(_dot(b2, b2)) * _dot(b1, n2), _dot(n1, n2))


def _fnv1a(text: str) -> int:
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >= 1 << 63 else h


def _substring(s: str, start: int, length: int) -> str:
    start = max(int(start), 0)
    return s[start:start + max(int(length), 0)]


BUILTINS = {b.name: b for b in [
    Builtin("listmin", 2, None, lambda *a: min(a)),
    Builtin("listmax", 2, None, lambda *a: max(a)),
    Builtin("date_part", 2, 2, _date_part),
    Builtin("regexp_match", 2, 2, lambda pattern, s: 1 if re.search(pattern, s) else 0),
    Builtin("substring", 3, 3, _substring),
    Builtin("cast_int", 1, 1, _cast_int),
    Builtin("cast_float", 1, 1, _cast_float),
    Builtin("cast_string", 1, 1, _cast_string),
    Builtin("cast_date", 1, 1, _cast_date),
    Builtin("vec_length", 3, 3, _vec_length),
    Builtin("vector_angle", 6, 6, _vector_angle),
    Builtin("dihedral_angle", 12, 12, _dihedral_angle),
    Builtin("radians", 1, 1, math.radians),
    Builtin("degrees", 1, 1, math.degrees),
    Builtin("pow", 2, 2, lambda b, e: math.pow(b, e)),
    Builtin("hash", 1, 1, lambda x, arg_type=None: _fnv1a(_cast_string(x, arg_type))),
]}

# Functions of standard SQL that only make sense with NULLs: refused with a clear message.
NULL_FUNCTIONS = {"coalesce", "nullif", "ifnull", "isnull", "nvl"}


def builtin_result_type(name: str, arg_types: list[Type]) -> Type | str:
    """The result type of a built-in call, or an error message (one line) on a type error."""
    def numeric(i):
        return arg_types[i].is_numeric

    match name:
        case "listmin" | "listmax":
            if all(t.is_numeric for t in arg_types):
                t = arg_types[0]
                for u in arg_types[1:]:
                    t = promote(t, u)
                return t
            if len(set(arg_types)) == 1:
                return arg_types[0]
            return f"{name} needs arguments of one type, got {', '.join(map(str, arg_types))}"
        case "date_part":
            if arg_types[0] != STRING or arg_types[1] != DATE:
                return f"date_part needs ('year'|'month'|'day', date), got ({arg_types[0]}, {arg_types[1]})"
            return INT
        case "regexp_match":
            if arg_types != [STRING, STRING]:
                return f"regexp_match needs (string pattern, string), got ({', '.join(map(str, arg_types))})"
            return INT
        case "substring":
            if arg_types[0] != STRING or not (arg_types[1] == INT and arg_types[2] == INT):
                return f"substring needs (string, int, int), got ({', '.join(map(str, arg_types))})"
            return STRING
        case "cast_int":
            return INT
        case "cast_float":
            return FLOAT
        case "cast_string":
            return STRING
        case "cast_date":
            if arg_types[0] not in (STRING, DATE):
                return f"cast_date needs a string, got {arg_types[0]}"
            return DATE
        case "hash":
            return INT
    # the numeric math functions
    for i in range(len(arg_types)):
        if not numeric(i):
            return f"{name} needs numbers, got {arg_types[i]} as argument {i + 1}"
    return FLOAT
