"""Scalar functions of the dialect (DIALECT.md §4) as the calculus evaluator runs them, and the
registry of external functions (CREATE FUNCTION ... AS EXTERNAL 'name').

Every engine that evaluates a function in Python uses these definitions; native backends that
lack a function refuse it by name (UnsupportedError) rather than guessing.
"""
from __future__ import annotations

import math
import re
import zlib
from typing import Callable

from toaster.errors import UnsupportedError
from toaster.types import int_to_date, date_to_int

EXTERNALS: dict[str, Callable] = {
    "cos": math.cos, "sin": math.sin, "tan": math.tan, "acos": math.acos, "asin": math.asin,
    "atan": math.atan, "atan2": math.atan2, "sqrt": math.sqrt, "exp": math.exp, "log": math.log,
    "abs": abs, "floor": math.floor, "ceil": math.ceil,
}


def register_external(name: str, fn: Callable) -> None:
    """Make `fn` callable from SQL as a function declared AS EXTERNAL 'name'."""
    EXTERNALS[name.lower()] = fn


def _date_part(part, d):
    part = str(part).lower()
    d = int(d)
    if part == "year":
        return d // 10000
    if part == "month":
        return d // 100 % 100
    if part == "day":
        return d % 100
    raise UnsupportedError(f"date_part {part!r}")


def _regexp_match(pattern, s) -> int:
    # unanchored search, as POSIX regexec(3) does
    return 1 if re.search(pattern, s) else 0


def like(s: str, pattern: str) -> int:
    """SQL LIKE: % any run, _ one character, whole string, case-sensitive."""
    rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return 1 if re.fullmatch(rx, s, flags=re.DOTALL) else 0


def _substring(s, start, length):
    start, length = int(start), int(length)
    return s[start:start + length] if length > 0 else ""


def _cast_int(x):
    if isinstance(x, str):
        m = re.match(r"\s*[+-]?\d+", x)
        return int(m.group()) if m else 0
    return int(x)


def _cast_float(x):
    return float(x)


def _cast_string(x, type_name=None):
    if type_name == "date":
        return int_to_date(x)
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _vec_length(x, y, z):
    return math.sqrt(x * x + y * y + z * z)


def _vector_angle(x1, y1, z1, x2, y2, z2):
    n = _vec_length(x1, y1, z1) * _vec_length(x2, y2, z2)
    c = (x1 * x2 + y1 * y2 + z1 * z2) / n
    return math.acos(max(-1.0, min(1.0, c)))


def _dihedral_angle(x1, y1, z1, x2, y2, z2, x3, y3, z3, x4, y4, z4):
    b1 = (x2 - x1, y2 - y1, z2 - z1)
    b2 = (x3 - x2, y3 - y2, z3 - z2)
    b3 = (x4 - x3, y4 - y3, z4 - z3)
    n1 = _cross(b1, b2)
    n2 = _cross(b2, b3)
    m1 = _cross(n1, _scale(b2, 1 / math.sqrt(_dot(b2, b2))))
    # IUPAC sign convention (the oracle's): the negated atan2 of the textbook formula
    return -math.atan2(_dot(m1, n2), _dot(n1, n2))


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _scale(a, k):
    return (a[0] * k, a[1] * k, a[2] * k)


def _hash(x) -> int:
    return zlib.crc32(repr(x).encode())


BUILTINS: dict[str, Callable] = {
    "listmin": lambda *a: min(a),
    "listmax": lambda *a: max(a),
    "date_part": _date_part,
    "regexp_match": _regexp_match,
    "substring": _substring,
    "cast_int": _cast_int,
    "cast_float": _cast_float,
    "cast_string": _cast_string,
    "cast_date": lambda s: s if isinstance(s, int) else date_to_int(s),
    "vec_length": _vec_length,
    "vector_angle": _vector_angle,
    "dihedral_angle": _dihedral_angle,
    "radians": math.radians,
    "degrees": math.degrees,
    "pow": lambda b, e: float(b) ** float(e),
    "hash": _hash,
    "like": like,
}


def call(name: str, args: list):
    """Apply a built-in or registered external function."""
    fn = BUILTINS.get(name) or EXTERNALS.get(name)
    if fn is None:
        raise UnsupportedError(f"function {name} (no implementation registered)")
    return fn(*args)
