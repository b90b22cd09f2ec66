"""Term machinery the rewrites share: child mapping, capture-avoiding substitution, beta.

`beta(fn, args)` is the one place a lambda meets its arguments: arguments that are simple
(a variable or a constant), unused, or used once outside any lambda are substituted; the rest
stay bound by a `let` (Apply of a Lambda), so no work is duplicated or moved into a loop.
"""
from __future__ import annotations

import itertools

from toaster.k3.ir import (
    Var, Const, BinOp, Not, Cast, Call, Lookup, Tuple, Project, Lambda, Apply, IfThenElse,
    Empty, Singleton, Union, Slice, Map, Filter, Flatten, Aggregate, GroupByAggregate,
    Iterate, Update, Replace, Clear, Block, children, free_vars, count_uses,
)

_fresh = itertools.count(1)


def map_children(e, f):
    """e with f applied to every direct sub-expression (lambda bodies included)."""
    match e:
        case Var() | Const() | Empty() | Clear():
            return e
        case BinOp(op, a, b, t):
            return BinOp(op, f(a), f(b), t)
        case Not(a):
            return Not(f(a))
        case Cast(t, a):
            return Cast(t, f(a))
        case Project(a, i):
            return Project(f(a), i)
        case Singleton(a):
            return Singleton(f(a))
        case Flatten(a):
            return Flatten(f(a))
        case Call(n, args, t):
            return Call(n, tuple(f(a) for a in args), t)
        case Lookup(m, keys, t):
            return Lookup(m, tuple(f(k) for k in keys), t)
        case Tuple(es):
            return Tuple(tuple(f(x) for x in es))
        case Union(ps):
            return Union(tuple(f(p) for p in ps))
        case Block(ss):
            return Block(tuple(f(s) for s in ss))
        case Lambda(ps, body):
            return Lambda(ps, f(body))
        case Apply(fn, args):
            return Apply(f(fn), tuple(f(a) for a in args))
        case IfThenElse(c, a, b):
            return IfThenElse(f(c), f(a), f(b))
        case Slice(m, pat, kts, vt):
            return Slice(m, tuple(None if p is None else f(p) for p in pat), kts, vt)
        case Map(fn, c):
            return Map(f(fn), f(c))
        case Filter(fn, c):
            return Filter(f(fn), f(c))
        case Iterate(fn, c):
            return Iterate(f(fn), f(c))
        case Aggregate(fn, init, c):
            return Aggregate(f(fn), f(init), f(c))
        case GroupByAggregate(g, fn, init, c):
            return GroupByAggregate(f(g), f(fn), f(init), f(c))
        case Update(m, keys, v):
            return Update(m, tuple(f(k) for k in keys), f(v))
        case Replace(m, c):
            return Replace(m, f(c))
    raise TypeError(f"not a K3 expression: {e!r}")


def subst(e, mapping: dict):
    """Capture-avoiding substitution of variables (by name) with expressions."""
    if not mapping:
        return e
    match e:
        case Var(n, _):
            return mapping.get(n, e)
        case Lambda(params, body):
            inner = {k: v for k, v in mapping.items() if all(p.name != k for p in params)}
            if not inner:
                return e
            needed = set()
            for k, v in inner.items():
                if count_uses(body, k):
                    needed |= free_vars(v)
            renames = {}
            new_params = []
            for p in params:
                if p.name in needed:
                    q = fresh_var(f"{p.name}_", p.type)
                    renames[p.name] = q
                    new_params.append(q)
                else:
                    new_params.append(p)
            if renames:
                body = subst(body, renames)
            return Lambda(tuple(new_params), subst(body, inner))
    return map_children(e, lambda x: subst(x, mapping))


def fresh_var(prefix: str, type_) -> Var:
    """A variable no program holds yet (numbered from a process-wide counter)."""
    return Var(f"{prefix}{next(_fresh)}", type_)


def is_simple(e) -> bool:
    return isinstance(e, (Var, Const))


def beta(fn: Lambda, args: tuple):
    """Apply(fn, args) with simple or unused/single-use arguments inlined; a let for the rest.

    A single-use argument is inlined only when its use is not under a lambda (which might run
    it many times)."""
    mapping, keep_p, keep_a = {}, [], []
    for p, a in zip(fn.params, args):
        uses = count_uses(fn.body, p.name)
        if uses == 0 or is_simple(a) or (uses == 1 and _used_outside_lambdas(fn.body, p.name)):
            mapping[p.name] = a
        else:
            keep_p.append(p)
            keep_a.append(a)
    body = subst(fn.body, mapping)
    if not keep_p:
        return body
    return Apply(Lambda(tuple(keep_p), body), tuple(keep_a))


def _used_outside_lambdas(e, name: str) -> bool:
    match e:
        case Var(n, _):
            return n == name
        case Lambda():
            return False
    return any(_used_outside_lambdas(c, name) for c in children(e))


def binds_none_of(f, g: Lambda) -> bool:
    """f has no free variable that g's parameters would capture if f moved into g's body."""
    return not (free_vars(f) & {p.name for p in g.params})
