"""Fusion (deforestation): a producer streams into its consumer, so no intermediate bag is built.

A map whose function yields a tuple literal `(e1, .., en)` is fused by substituting the fields
into the consumer's function; `flatten(map(g, c))` (one bag per element of c) is fused by moving
the consumer inside g's body, into the per-element bag.
"""
from __future__ import annotations

from toaster.k3.ir import (
    Tuple, Lambda, IfThenElse, Empty, Singleton, Map, Filter, Flatten, Aggregate,
    GroupByAggregate, Iterate, CollType, type_of,
)
from toaster.k3.rewrites.registry import rewrite
from toaster.k3.rewrites.terms import beta


def _yields_tuple(g: Lambda) -> bool:
    return isinstance(g.body, Tuple)


# -------------------------------------------------------------- producer into producer


@rewrite("map_of_map", on=Map)
def map_of_map(e):
    """map(f, map(g, c)) = map(f . g, c): two maps in a row are one map of the composition."""
    match e:
        case Map(f, Map(g, c)) if _yields_tuple(g):
            return Map(Lambda(g.params, beta(f, g.body.elems)), c)
    return None


@rewrite("flatten_of_map_of_singleton", on=Flatten)
def flatten_of_map_of_singleton(e):
    """flatten(map(\\p. {x}, c)) = map(\\p. x, c): one-element bags per element need no union."""
    match e:
        case Flatten(Map(Lambda(ps, Singleton(x)), c)):
            return Map(Lambda(ps, x), c)
    return None


@rewrite("flatten_of_map_of_flatten", on=Flatten)
def flatten_of_map_of_flatten(e):
    """flatten(map(f, flatten(map(g, c)))) = flatten(map(\\p. flatten(map(f, g(p))), c)): bind is associative."""
    match e:
        case Flatten(Map(f, Flatten(Map(g, c)))):
            return Flatten(Map(Lambda(g.params, Flatten(Map(f, g.body))), c))
    return None


@rewrite("map_of_flatten", on=Map)
def map_of_flatten(e):
    """map(f, flatten(map(g, c))) = flatten(map(\\p. map(f, g(p)), c)): map each inner bag."""
    match e:
        case Map(f, Flatten(Map(g, c))):
            return Flatten(Map(Lambda(g.params, Map(f, g.body)), c))
    return None


@rewrite("map_of_filter", on=Map)
def map_of_filter(e):
    """map(f, filter(p, c)) = flatten(map(\\x. if p(x) then {f(x)} else {}, c)): test inside the map."""
    match e:
        case Map(f, Filter(p, c)):
            args = tuple(p.params)
            body = IfThenElse(beta(p, args), Singleton(beta(f, args)), Empty(CollType(type_of(f.body))))
            return Flatten(Map(Lambda(p.params, body), c))
    return None


@rewrite("flatten_of_flatten", on=Flatten)
def flatten_of_flatten(e):
    """flatten(flatten(map(\\p. b, c))) = flatten(map(\\p. flatten(b), c)): flatten each element's bag."""
    match e:
        case Flatten(Flatten(Map(Lambda(ps, body), c))):
            return Flatten(Map(Lambda(ps, Flatten(body)), c))
    return None


# -------------------------------------------------------------- producer into consumer


@rewrite("iterate_of_map", on=Iterate)
def iterate_of_map(e):
    """iterate(f, map(g, c)) = iterate(f . g, c): the loop body takes g's result directly."""
    match e:
        case Iterate(f, Map(g, c)) if _yields_tuple(g):
            return Iterate(Lambda(g.params, beta(f, g.body.elems)), c)
    return None


@rewrite("fold_of_map", on=Aggregate)
def fold_of_map(e):
    """aggregate(f, z, map(g, c)) = aggregate(\\(acc, p). f(acc, g(p)), z, c): fold g's results as made."""
    match e:
        case Aggregate(f, init, Map(g, c)) if _yields_tuple(g):
            acc = f.params[0]
            step = beta(Lambda(f.params[1:], f.body), g.body.elems)
            return Aggregate(Lambda((acc,) + g.params, step), init, c)
    return None


@rewrite("group_by_of_map", on=GroupByAggregate)
def group_by_of_map(e):
    """group_by(k, f, z, map(g, c)) = group_by(k . g, \\(acc, p). f(acc, g(p)), z, c): group g's results as made."""
    match e:
        case GroupByAggregate(group, f, init, Map(g, c)) if _yields_tuple(g):
            acc = f.params[0]
            step = beta(Lambda(f.params[1:], f.body), g.body.elems)
            return GroupByAggregate(Lambda(g.params, beta(group, g.body.elems)),
                                    Lambda((acc,) + g.params, step), init, c)
    return None


@rewrite("iterate_of_flatten", on=Iterate)
def iterate_of_flatten(e):
    """iterate(f, flatten(map(g, c))) = iterate(\\p. iterate(f, g(p)), c): a nested loop, no union built."""
    match e:
        case Iterate(f, Flatten(Map(g, c))):
            return Iterate(Lambda(g.params, Iterate(f, g.body)), c)
    return None
