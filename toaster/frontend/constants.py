"""Exact constant expressions (issue 12): literals and arithmetic over them fold exactly.

Numeric literals with a decimal point are kept as `decimal.Decimal` in the AST (the digits as
written), so `0.06 + 0.01` is exactly 0.07, as in DuckDB's DECIMAL arithmetic. A constant
subexpression (literals, + - * /, unary minus) is evaluated with `fractions.Fraction` and
rounded once, where it meets the runtime: a FLOAT constant becomes the double nearest to the
exact value (so it equals a DECIMAL column value read from the same digits).
"""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from toaster.frontend import ast as A
from toaster.types import FLOAT, INT


def constant_value(e) -> Fraction | None:
    """The exact value of a numeric constant expression, or None if e is not one (or divides
    by zero: that stays an IEEE runtime result)."""
    match e:
        case A.Literal(v, t) if t in (INT, FLOAT) and not isinstance(v, bool):
            return Fraction(v)
        case A.Negate(a):
            x = constant_value(a)
            return None if x is None else -x
        case A.BinaryOp(op, l, r):
            x = constant_value(l)
            y = constant_value(r) if x is not None else None
            if y is None:
                return None
            if op == "+":
                return x + y
            if op == "-":
                return x - y
            if op == "*":
                return x * y
            if op == "/" and y != 0:
                return x / y
    return None


def runtime_constant(value: Fraction, t):
    """The runtime value of an exact constant of type t: an int, or the nearest double."""
    if t == INT and value.denominator == 1:
        return int(value)
    return float(value)


def folded(e):
    """(runtime value, type) of a numeric constant expression e, or None."""
    if not isinstance(e, (A.Literal, A.Negate, A.BinaryOp)) or getattr(e, "type", None) not in (INT, FLOAT):
        return None
    v = constant_value(e)
    if v is None:
        return None
    return runtime_constant(v, e.type), e.type


def decimal_text(v: Decimal) -> str:
    """A Decimal as plain digits with a decimal point (DuckDB reads it as a DECIMAL literal)."""
    s = format(v, "f")
    return s if "." in s else s + ".0"
