"""Materialization decisions for re-evaluated maps (Generalized HO-IVM, VLDBJ'14 Alg. 2, Fig. 2).

A map whose delta is not simpler than itself (nested aggregates) is recomputed after each
update, but not from the base relations: the expression is expanded into monomials; nested
aggregates are decorrelated and materialized on their own (their correlation variables become
map keys); the remaining relation atoms are decomposed into connected components, each
materialized with the keys the rest of the expression needs. Every new map has no nested
aggregate left, so it is maintained incrementally. This is the PSP plan of VLDBJ'14 §6.2:
the re-evaluation only scans small aggregated maps.
"""
from __future__ import annotations


from toaster.calculus.ir import (AggSum, Extremum, Lift, MapRef, Rel, Value, all_vars, schema,
                                 mk_prod, mk_sum, relations, Const)
from toaster.calculus.simplify import simplify_monomials, subst
from toaster.calculus.toposort import connected_components
from toaster.types import FLOAT, INT


def reevaluation_rhs(compiler, m, body, keys) -> object:
    """The right-hand side of `m[keys] := ...` over materialized maps."""
    terms = []
    for mono in simplify_monomials(body, set(keys)):
        factors = _materialize(compiler, m, list(mono.factors), set(keys), frozenset())
        coef = [] if mono.coef == 1 else [Value(Const(mono.coef, FLOAT if isinstance(mono.coef, float) else INT))]
        term = mk_prod(coef + factors)
        if schema(term)[1] - set(keys):
            term = AggSum(tuple(keys), term)   # every term of the sum binds the keys only
        terms.append(term)
    return AggSum(tuple(keys), mk_sum(terms))


def _materialize(compiler, m, factors, needed_out: set, bound: frozenset) -> list:
    """Factors of one monomial with relation atoms and nested aggregates replaced by maps.
    `needed_out` are variables the enclosing expression reads; `bound` those it binds first."""
    from toaster.calculus.ir import schema
    rels = [f for f in factors if isinstance(f, Rel)]
    others = []
    seen = set(bound) | _atom_vars(rels)   # variables bound before each factor runs
    for f in factors:
        if isinstance(f, Rel):
            continue
        if isinstance(f, (Lift, Extremum, AggSum)) and relations(f):
            f = _nested(compiler, m, f, frozenset(seen))
        seen |= schema(f, seen)[1]
        others.append(f)
    comps = components(rels, bound)
    comp_vars = [set().union(*(set(r.vars) for r in c)) - bound for c in comps]
    assigned = [[] for _ in comps]
    outside = []
    for f in others:
        fv = all_vars(f) - bound
        homes = [i for i, cv in enumerate(comp_vars) if fv and fv <= cv and not (all_vars(f) & bound)]
        if len(homes) == 1 and not isinstance(f, Lift):
            assigned[homes[0]].append(f)
        else:
            outside.append(f)
    need = set(needed_out)
    for f in outside:
        need |= all_vars(f)
    refs = []
    for comp, cv, extra in zip(comps, comp_vars, assigned):
        atom_vars = _atom_vars(comp)
        in_vars = [v for v in _ordered(comp) if v in bound]
        out_vars = [v for v in _ordered(comp + extra) if v in cv and v in need and v in atom_vars]
        args = tuple(in_vars + [v for v in out_vars if v not in in_vars])
        renaming = compiler.key_renaming(comp + extra, in_vars)
        map_keys = tuple(renaming.get(v, v) for v in args)
        definition = AggSum(map_keys, subst(mk_prod(comp + extra), renaming))
        name, order = compiler._register(definition, map_keys, m)
        refs.append(MapRef(name, tuple(args[i] for i in order), compiler.maps[name].type))
    # the remaining factors keep their order: a lift or nested aggregate may read variables
    # that an earlier one binds
    return refs + outside


def materialize_nested(compiler, m, f, outer: frozenset):
    """A nested aggregate factor of a trigger statement over decorrelated maps."""
    return _nested(compiler, m, f, outer)


def _nested(compiler, m, f, outer: frozenset):
    """A nested aggregate with its relations replaced by maps; variables bound outside it
    (correlation) stay free in it and become keys of the maps that use them."""
    match f:
        case Lift(x, q):
            return Lift(x, _nested_expr(compiler, m, q, outer))
        case Extremum(kind, gs, t, q):
            inner = _nested_expr(compiler, m, AggSum(gs, q), outer, extra_needed=all_vars(Value(t)))
            return Extremum(kind, gs, t, inner.expr if isinstance(inner, AggSum) else inner)
        case AggSum():
            return _nested_expr(compiler, m, f, outer)
    return f


def _nested_expr(compiler, m, q, outer: frozenset, extra_needed=frozenset()):
    gs = q.group if isinstance(q, AggSum) else ()
    body = q.expr if isinstance(q, AggSum) else q
    used = all_vars(body)
    # a group variable bound outside is a correlation like any other (it filters the groups)
    bound = frozenset(v for v in outer if v in used)
    terms = []
    keep = set(gs) | set(extra_needed)
    for mono in simplify_monomials(body, set(gs) | set(bound) | set(extra_needed)):
        fs = _materialize(compiler, m, list(mono.factors), keep, bound)
        coef = [] if mono.coef == 1 else [Value(Const(mono.coef, FLOAT if isinstance(mono.coef, float) else INT))]
        term = mk_prod(coef + fs)
        if schema(term, bound)[1] - keep:
            # a term still binding its own variables (a delta relation's columns) is summed
            # over them, so that every term of the sum binds the same variables
            term = AggSum(tuple(v for v in gs if v not in bound) + tuple(v for v in extra_needed if v not in gs), term)
        terms.append(term)
    return AggSum(tuple(gs), mk_sum(terms)) if isinstance(q, AggSum) else mk_sum(terms)


def _atom_vars(rels) -> set:
    out = set()
    for r in rels:
        out |= set(r.vars)
    return out


def _ordered(factors) -> list:
    out = []
    for f in factors:
        vs = list(f.vars) if isinstance(f, (Rel, MapRef)) else sorted(all_vars(f), key=lambda v: v.name)
        for v in vs:
            if v not in out:
                out.append(v)
    return out


def components(rels, known) -> list:
    """Connected components of relation atoms joined on variables not bound in `known`."""
    edges = [(i, j) for i, r in enumerate(rels) for j in range(i)
             if (set(r.vars) & set(rels[j].vars)) - known]
    comps = connected_components(len(rels), edges)
    return [[rels[i] for i in c] for c in comps]
