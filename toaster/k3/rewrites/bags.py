"""Laws of the one-element bag {x} and the empty bag {}: an operator over them needs no loop."""
from __future__ import annotations

from toaster.k3.ir import (
    Tuple, IfThenElse, Empty, Singleton, Map, Filter, Flatten, Aggregate, Iterate, Block,
    CollType, type_of,
)
from toaster.k3.rewrites.registry import rewrite
from toaster.k3.rewrites.terms import beta, is_simple

# ------------------------------------------------------------------- one element


@rewrite("map_of_singleton", on=Map)
def map_of_singleton(e):
    """map(f, {x}) = {f(x)}: mapping over a one-element bag is applying f once."""
    match e:
        case Map(fn, Singleton(Tuple(es))):
            return Singleton(beta(fn, es))
    return None


@rewrite("flatten_of_singleton", on=Flatten)
def flatten_of_singleton(e):
    """flatten({c}) = c: the union of one bag is that bag."""
    match e:
        case Flatten(Singleton(c)):
            return c
    return None


@rewrite("filter_of_singleton", on=Filter)
def filter_of_singleton(e):
    """filter(p, {x}) = if p(x) then {x} else {}: a one-element filter is a test (x's fields simple)."""
    match e:
        case Filter(p, Singleton(Tuple(es)) as one) if all(is_simple(x) for x in es):
            return IfThenElse(beta(p, es), one, Empty(type_of(one)))
    return None


@rewrite("fold_of_singleton", on=Aggregate)
def fold_of_singleton(e):
    """aggregate(f, z, {x}) = f(z, x): folding one element is one step from the initial value."""
    match e:
        case Aggregate(f, init, Singleton(Tuple(es))):
            return beta(f, (init,) + tuple(es))
    return None


@rewrite("iterate_of_singleton", on=Iterate)
def iterate_of_singleton(e):
    """iterate(f, {x}) = f(x): a loop over one element is its body run once."""
    match e:
        case Iterate(f, Singleton(Tuple(es))):
            return beta(f, es)
    return None


# ------------------------------------------------------------------------- empty


@rewrite("map_of_empty", on=Map)
def map_of_empty(e):
    """map(f, {}) = {}: mapping over nothing gives nothing (of f's result type)."""
    match e:
        case Map(fn, Empty()):
            return Empty(CollType(type_of(fn.body)))
    return None


@rewrite("filter_of_empty", on=Filter)
def filter_of_empty(e):
    """filter(p, {}) = {}: filtering nothing keeps nothing."""
    match e:
        case Filter(_, Empty() as empty):
            return empty
    return None


@rewrite("flatten_of_empty", on=Flatten)
def flatten_of_empty(e):
    """flatten({}) = {}: the union of no bags is empty."""
    match e:
        case Flatten(Empty(t)):
            return Empty(t.elem)
    return None


@rewrite("iterate_of_empty", on=Iterate)
def iterate_of_empty(e):
    """iterate(f, {}) = {}: a loop over nothing does nothing (the empty statement block)."""
    match e:
        case Iterate(_, Empty()):
            return Block(())
    return None


@rewrite("fold_of_empty", on=Aggregate)
def fold_of_empty(e):
    """aggregate(f, z, {}) = z: folding nothing leaves the initial value."""
    match e:
        case Aggregate(_, init, Empty()):
            return init
    return None
