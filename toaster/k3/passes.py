"""K3 -> K3 optimization passes: 'k3_beta_reduce', 'k3_fuse', 'k3_cse'.

Each pass is a bottom-up rewrite to a fixpoint and preserves the program's meaning (checked
by running programs before and after in tests/test_k3.py).
"""
from __future__ import annotations

import itertools
from dataclasses import replace

from toaster.passes import pass_
from toaster.k3.ir import (
    Var, Const, BinOp, Not, Cast, Call, Lookup, Tuple, Project, Lambda, Apply, IfThenElse,
    Empty, Singleton, Union, Slice, Map, Filter, Flatten, Aggregate, GroupByAggregate,
    Iterate, Update, Replace, Clear, Block, K3Program, CollType, type_of, free_vars, count_uses,
)

_fresh = itertools.count(1)


# ------------------------------------------------------------- generic rewriting

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


def bottom_up(e, rule):
    """Rewrite children first, then apply `rule` at the node until it stops changing."""
    e = map_children(e, lambda x: bottom_up(x, rule))
    while True:
        new = rule(e)
        if new is None or new == e:
            return e
        e = map_children(new, lambda x: bottom_up(x, rule))


def rewrite_program(program: K3Program, fn) -> K3Program:
    triggers = tuple(replace(t, body=tuple(fn(s) for s in t.body)) for t in program.triggers)
    return replace(program, triggers=triggers)


# ------------------------------------------------------------------ substitution

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
                    q = Var(f"{p.name}_{next(_fresh)}", p.type)
                    renames[p.name] = q
                    new_params.append(q)
                else:
                    new_params.append(p)
            if renames:
                body = subst(body, renames)
            return Lambda(tuple(new_params), subst(body, inner))
    return map_children(e, lambda x: subst(x, mapping))


def _is_simple(e) -> bool:
    return isinstance(e, (Var, Const))


def beta(fn: Lambda, args: tuple):
    """Apply(fn, args) with simple or unused/single-use arguments inlined; a let for the rest.

    A single-use argument is inlined only when its use is not under a lambda (which might run
    it many times)."""
    mapping, keep_p, keep_a = {}, [], []
    for p, a in zip(fn.params, args):
        uses = count_uses(fn.body, p.name)
        if uses == 0 or _is_simple(a) or (uses == 1 and _used_outside_lambdas(fn.body, p.name)):
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
    return any(_used_outside_lambdas(c, name) for c in _kids(e))


def _kids(e):
    out = []
    map_children(e, lambda x: out.append(x) or x)
    return out


# ------------------------------------------------------------------- beta reduce

def _beta_rule(e):
    match e:
        case Apply(Lambda() as fn, args) if len(fn.params) == len(args):
            new = beta(fn, args)
            return None if new == e else new
        case Project(Tuple(es), i):
            return es[i]
    return None


@pass_("k3_beta_reduce", "k3", "k3")
def k3_beta_reduce(program: K3Program, options=None) -> K3Program:
    """Inline lambdas applied to known arguments (lets of simple or single-use values)."""
    return rewrite_program(program, lambda s: bottom_up(s, _beta_rule))


# -------------------------------------------------------------------------- fuse

def _tuple_args(elem):
    """Field expressions of an element that is syntactically a tuple, else None."""
    return elem.elems if isinstance(elem, Tuple) else None


def _fuse_rule(e):
    match e:
        # map f over {x}  ==>  {f(x)}
        case Map(fn, Singleton(Tuple(es))):
            return Singleton(beta(fn, es))
        # flatten {c} ==> c
        case Flatten(Singleton(c)):
            return c
        # map / filter / flatten / iterate / aggregate of empty
        case Map(fn, Empty()):
            return Empty(CollType(type_of(fn.body)))
        case Filter(_, Empty() as em):
            return em
        case Flatten(Empty(t)):
            return Empty(t.elem)
        case Iterate(_, Empty()):
            return Block(())
        case Aggregate(_, init, Empty()):
            return init
        # map f over (map g over c)  ==>  map (f . g) over c
        case Map(f, Map(g, c)) if _tuple_args(g.body) is not None:
            return Map(Lambda(g.params, beta(f, g.body.elems)), c)
        # flatten(map(\p. {x}, c))  ==>  map(\p. x, c)
        case Flatten(Map(Lambda(ps, Singleton(x)), c)):
            return Map(Lambda(ps, x), c)
        # flatten(map(f, flatten(map(g, c))))  ==>  flatten(map(\g.p. flatten(map(f, g.body)), c))
        case Flatten(Map(f, Flatten(Map(g, c)))):
            return Flatten(Map(Lambda(g.params, Flatten(Map(f, g.body))), c))
        # map(f, flatten(map(g, c)))  ==>  flatten(map(\g.p. map(f, g.body), c))
        case Map(f, Flatten(Map(g, c))):
            return Flatten(Map(Lambda(g.params, Map(f, g.body)), c))
        # filter(p, {x})  ==>  if p(x) then {x} else {}   (x simple fields only)
        case Filter(p, Singleton(Tuple(es)) as one) if all(_is_simple(x) for x in es):
            return IfThenElse(beta(p, es), one, Empty(type_of(one)))
        # map f over (if c then a else b)  ==>  if c then map f a else map f b
        case Map(f, IfThenElse(cnd, a, b)):
            return IfThenElse(cnd, Map(f, a), Map(f, b))
        case Flatten(IfThenElse(cnd, a, b)):
            return IfThenElse(cnd, Flatten(a), Flatten(b))
        # map f over filter p over c  ==>  flatten(map(\x. if p(x) then {f(x)} else {}, c))
        case Map(f, Filter(p, c)):
            args = tuple(p.params)
            body = IfThenElse(beta(p, args), Singleton(beta(f, args)), Empty(CollType(type_of(f.body))))
            return Flatten(Map(Lambda(p.params, body), c))
        # consumers absorb the producing map: iterate / aggregate / group-by of map g over c
        case Iterate(f, Map(g, c)) if _tuple_args(g.body) is not None:
            return Iterate(Lambda(g.params, beta(f, g.body.elems)), c)
        case Aggregate(f, init, Map(g, c)) if _tuple_args(g.body) is not None:
            acc = f.params[0]
            return Aggregate(Lambda((acc,) + g.params, beta(Lambda(f.params[1:], f.body), g.body.elems)), init, c)
        case GroupByAggregate(gr, f, init, Map(g, c)) if _tuple_args(g.body) is not None:
            acc = f.params[0]
            return GroupByAggregate(Lambda(g.params, beta(gr, g.body.elems)),
                                    Lambda((acc,) + g.params, beta(Lambda(f.params[1:], f.body), g.body.elems)),
                                    init, c)
        # iterate f over flatten(map(g, c))  ==>  iterate (\g.p. iterate f over g.body) over c
        case Iterate(f, Flatten(Map(g, c))):
            return Iterate(Lambda(g.params, Iterate(f, g.body)), c)
        case Aggregate(f, init, Singleton(Tuple(es))):
            return beta(f, (init,) + tuple(es))
        case Iterate(f, Singleton(Tuple(es))):
            return beta(f, es)
        case Iterate(f, IfThenElse(cnd, a, b)):
            return IfThenElse(cnd, Iterate(f, a), Iterate(f, b))
        case Iterate(f, Union(parts)):
            return Block(tuple(Iterate(f, p) for p in parts))
        case Iterate(f, Apply(g, args)):
            return Apply(Lambda(g.params, Iterate(f, g.body)), args) if not (free_vars(f) & {p.name for p in g.params}) else None
        case Map(f, Apply(g, args)) if not (free_vars(f) & {p.name for p in g.params}):
            return Apply(Lambda(g.params, Map(f, g.body)), args)
        case Flatten(Apply(g, args)):
            return Apply(Lambda(g.params, Flatten(g.body)), args)
        case Map(Lambda(ps, body), c) if body == Tuple(ps):
            return c
        case Flatten(Flatten(Map(Lambda(ps, body), c))):
            return Flatten(Map(Lambda(ps, Flatten(body)), c))
        # arithmetic identities (same types only, so no conversion is lost)
        case BinOp("+", Const(0, _), x, t) | BinOp("+", x, Const(0, _), t) if type_of(x) == t:
            return x
        case BinOp("*", Const(1, _), x, t) | BinOp("*", x, Const(1, _), t) if type_of(x) == t:
            return x
        case Apply(Lambda() as fn, args) if len(fn.params) == len(args):
            new = beta(fn, args)
            return None if new == e else new
    return None


@pass_("k3_fuse", "k3", "k3")
def k3_fuse(program: K3Program, options=None) -> K3Program:
    """Fusion / deforestation: stream producers into consumers so no intermediate bag is built."""
    return rewrite_program(program, lambda s: bottom_up(s, _fuse_rule))


# --------------------------------------------------------------------------- cse

def _cse_stmt(stmt, params: set):
    """Let-bind, once before the statement, lookups that occur more than once in it and are
    keyed only by trigger arguments and constants (their value cannot change inside it: a
    statement never writes a map it reads)."""
    counts: dict = {}

    def visit(x):
        if isinstance(x, Lookup) and all(_is_simple(k) for k in x.keys) and free_vars(x) <= params:
            counts[x] = counts.get(x, 0) + 1
        map_children(x, visit)
        return x

    visit(stmt)
    repeated = [l for l, n in counts.items() if n > 1]
    if not repeated:
        return stmt
    names = {l: Var(f"_cse{next(_fresh)}", l.type) for l in repeated}

    def swap(x):
        return names[x] if x in names else map_children(x, swap)

    return Apply(Lambda(tuple(names[l] for l in repeated), swap(stmt)), tuple(repeated))


@pass_("k3_cse", "k3", "k3")
def k3_cse(program: K3Program, options=None) -> K3Program:
    """Common-subexpression elimination of repeated map lookups keyed by trigger arguments."""
    triggers = []
    for t in program.triggers:
        params = {p.name for p in t.params}
        triggers.append(replace(t, body=tuple(_cse_stmt(s, params) for s in t.body)))
    return replace(program, triggers=tuple(triggers))
