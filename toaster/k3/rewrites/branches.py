"""Moving a consumer into the branches of a conditional, the parts of a union, or the body of a
let, where the other laws can meet the producer."""
from __future__ import annotations

from toaster.k3.ir import Lambda, Apply, IfThenElse, Union, Map, Flatten, Iterate, Block
from toaster.k3.rewrites.registry import rewrite
from toaster.k3.rewrites.terms import binds_none_of


@rewrite("map_of_if", on=Map)
def map_of_if(e):
    """map(f, if c then a else b) = if c then map(f, a) else map(f, b): map each branch."""
    match e:
        case Map(f, IfThenElse(cond, a, b)):
            return IfThenElse(cond, Map(f, a), Map(f, b))
    return None


@rewrite("flatten_of_if", on=Flatten)
def flatten_of_if(e):
    """flatten(if c then a else b) = if c then flatten(a) else flatten(b): flatten each branch."""
    match e:
        case Flatten(IfThenElse(cond, a, b)):
            return IfThenElse(cond, Flatten(a), Flatten(b))
    return None


@rewrite("iterate_of_if", on=Iterate)
def iterate_of_if(e):
    """iterate(f, if c then a else b) = if c then iterate(f, a) else iterate(f, b): loop in each branch."""
    match e:
        case Iterate(f, IfThenElse(cond, a, b)):
            return IfThenElse(cond, Iterate(f, a), Iterate(f, b))
    return None


@rewrite("iterate_of_union", on=Iterate)
def iterate_of_union(e):
    """iterate(f, a + b) = {iterate(f, a); iterate(f, b)}: a loop over a union is one loop per part."""
    match e:
        case Iterate(f, Union(parts)):
            return Block(tuple(Iterate(f, p) for p in parts))
    return None


@rewrite("iterate_of_let", on=Iterate)
def iterate_of_let(e):
    """iterate(f, let x = v in c) = let x = v in iterate(f, c): loop inside the let (x not free in f)."""
    match e:
        case Iterate(f, Apply(g, args)) if binds_none_of(f, g):
            return Apply(Lambda(g.params, Iterate(f, g.body)), args)
    return None


@rewrite("map_of_let", on=Map)
def map_of_let(e):
    """map(f, let x = v in c) = let x = v in map(f, c): map inside the let (x not free in f)."""
    match e:
        case Map(f, Apply(g, args)) if binds_none_of(f, g):
            return Apply(Lambda(g.params, Map(f, g.body)), args)
    return None


@rewrite("flatten_of_let", on=Flatten)
def flatten_of_let(e):
    """flatten(let x = v in c) = let x = v in flatten(c): flatten inside the let."""
    match e:
        case Flatten(Apply(g, args)):
            return Apply(Lambda(g.params, Flatten(g.body)), args)
    return None
