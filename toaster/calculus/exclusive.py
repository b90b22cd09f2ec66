"""When at most one disjunct of an OR can hold, so that the OR translates to the sum of its
disjuncts instead of inclusion-exclusion (a + b - a*b: the a*b terms become maps and loops of
their own, and grow exponentially with the number of disjuncts).

Two conditions exclude each other when they pin a common expression to different constants
(`x = 1` / `x = 2`, an IN list), or bound one difference to disjoint ranges (`a - b > 1` /
`b - a > 1`, `a > b` / `a < b`: an order book's "prices apart by more than ..."). The ranges are
read only where IEEE arithmetic keeps them exact: `b - a` is exactly `-(a - b)`, and `a > b` holds
exactly when `a - b > 0`; constants are the literals as written (exact decimals)."""
from __future__ import annotations

from decimal import Decimal

from toaster.frontend import ast as A

_MISSING = object()
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _equalities(c) -> dict:
    """{expression: constant} for the `expr = constant` conjuncts of a condition."""
    out = {}
    for x in (c.args if isinstance(c, A.And) else (c,)):
        if isinstance(x, A.Comparison) and x.op == "=":
            if isinstance(x.right, A.Literal) and not isinstance(x.left, A.Literal):
                out[x.left] = x.right.value
            elif isinstance(x.left, A.Literal) and not isinstance(x.right, A.Literal):
                out[x.right] = x.left.value
    return out


def _number(e):
    """The value of a numeric literal as written (`-0.5` parses as a negated literal), else None."""
    if isinstance(e, A.Negate):
        v = _number(e.arg)
        return None if v is None else -v
    if isinstance(e, A.Literal) and isinstance(e.value, (int, float, Decimal)) and not isinstance(e.value, bool):
        return e.value
    return None


def _difference_bound(c):
    """(x, y, op, k) when condition c says `x - y op k` exactly (op one of < <= > >=), else None."""
    if not isinstance(c, A.Comparison) or c.op not in _FLIP:
        return None
    op, left, right = c.op, c.left, c.right
    if _number(left) is not None and _number(right) is None:
        op, left, right = _FLIP[op], right, left
    k = _number(right)
    if k is not None:
        if isinstance(left, A.BinaryOp) and left.op == "-":
            return left.left, left.right, op, k
        return None
    if _number(left) is None:
        return left, right, op, 0          # x op y  <=>  x - y op 0
    return None


def _disjoint_differences(a, b) -> bool:
    """a and b bound the same difference (or its negation) to ranges with no common point."""
    da, db = _difference_bound(a), _difference_bound(b)
    if da is None or db is None:
        return False
    (x, y, op_a, k_a), (u, v, op_b, k_b) = da, db
    if (u, v) == (y, x):                   # v - u = -(x - y): negate b's bound
        op_b, k_b = _FLIP[op_b], -k_b
    elif (u, v) != (x, y):
        return False
    lower = [(k, op == ">") for op, k in ((op_a, k_a), (op_b, k_b)) if op in (">", ">=")]
    upper = [(k, op == "<") for op, k in ((op_a, k_a), (op_b, k_b)) if op in ("<", "<=")]
    if not lower or not upper:
        return False
    (lo, lo_strict), (hi, hi_strict) = lower[0], upper[0]
    return lo > hi or (lo == hi and (lo_strict or hi_strict))


def _exclude(a, b, eq_a: dict, eq_b: dict) -> bool:
    return any(k in eq_b and eq_b[k] != v for k, v in eq_a.items()) or _disjoint_differences(a, b)


def mutually_exclusive(conds) -> bool:
    """Every two conditions exclude each other (see the module docstring)."""
    eqs = [_equalities(c) for c in conds]
    # the common case, an IN list or `x = 1 OR x = 2 OR ...`: one expression that every
    # condition pins to a different constant (linear; the pairwise check is quadratic)
    for k in (eqs[0] if eqs else ()):
        values = [e.get(k, _MISSING) for e in eqs]
        if _MISSING not in values and len(set(values)) == len(values):
            return True
    return all(_exclude(conds[i], conds[j], eqs[i], eqs[j])
               for i in range(len(conds)) for j in range(i + 1, len(conds)))
