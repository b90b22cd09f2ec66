"""Identities that remove a node outright, and beta reduction (a let of known arguments)."""
from __future__ import annotations

from toaster.k3.ir import Const, BinOp, Tuple, Lambda, Apply, Map, type_of
from toaster.k3.rewrites.registry import rewrite
from toaster.k3.rewrites.terms import beta as _beta


@rewrite("map_of_identity", on=Map)
def map_of_identity(e):
    """map(\\p. p, c) = c: mapping each element to itself changes nothing."""
    match e:
        case Map(Lambda(ps, body), c) if body == Tuple(ps):
            return c
    return None


@rewrite("add_zero", on=BinOp)
def add_zero(e):
    """x + 0 = 0 + x = x: when x already has the sum's type (no conversion is lost)."""
    match e:
        case BinOp("+", Const(0, _), x, t) | BinOp("+", x, Const(0, _), t) if type_of(x) == t:
            return x
    return None


@rewrite("mul_one", on=BinOp)
def mul_one(e):
    """x * 1 = 1 * x = x: when x already has the product's type (no conversion is lost)."""
    match e:
        case BinOp("*", Const(1, _), x, t) | BinOp("*", x, Const(1, _), t) if type_of(x) == t:
            return x
    return None


@rewrite("beta", on=Apply)
def beta(e):
    """(\\p. b)(a) = b[p := a]: a let of simple, unused or once-used (outside loops) arguments is inlined."""
    match e:
        case Apply(Lambda() as fn, args) if len(fn.params) == len(args):
            new = _beta(fn, args)
            return None if new == e else new
    return None
