"""Materialization decisions for re-evaluated maps (Generalized HO-IVM, VLDBJ'14 Alg. 2, Fig. 2).

A map whose delta is not simpler than itself (nested aggregates) is recomputed after each
update, but not from the base relations: the expression is expanded into monomials; nested
aggregates are decorrelated and materialized on their own (their correlation variables become
map keys); the remaining relation atoms are decomposed into connected components, each
materialized with the keys the rest of the expression needs. Every new map has no nested
aggregate left, so it is maintained incrementally. This is the PSP plan of VLDBJ'14 §6.2:
the re-evaluation only scans small aggregated maps.

It also holds the cut of cyclic components that the trigger compiler (hoivm.py) applies to
every delta: `split_cyclic`, `binding_order` (see the section at the end).
"""
from __future__ import annotations


from toaster.calculus.ir import (AggSum, Extremum, Lift, MapRef, Prod, Rel, Sum, Value, all_vars, schema,
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


# ------------------------------------------------------------------ cyclic components
# A delta of a cyclic join (TPC-H Q5: CUSTOMER-ORDERS-LINEITEM-SUPPLIER closed by
# c_nationkey = s_nationkey) binds variables in two atoms that the rest of the cycle still
# connects. Materialized whole, such a component is a map keyed by both atoms' bound variables:
# the join of the path between them, a cross product in effect (Q5's ORDERS delta kept
# CUSTOMER x LINEITEM per nation: 5 M entries after 40,000 events of the SF 0.1 stream). Cutting the path at a join variable
# gives maps keyed by one atom's bound variables and the cut, joined on the cut in the statement.

def anchored(atoms, known) -> bool:
    """Whether one atom holds every bound variable the atoms use (no cross product of
    independently bound keys)."""
    used = set().union(*(set(a.vars) for a in atoms)) & set(known)
    return not used or any(used <= set(a.vars) for a in atoms)


def split_cyclic(atoms, extras, known, needed, max_cut: int = 2):
    """For a component whose bound variables are not all in one atom: (cut variables, [(atoms,
    extras) per part]) where every part is anchored and every extra factor has one home; or
    None (already anchored, nested aggregates inside, or no clean cut). `needed`: variables the
    statement reads outside the component. Among the smallest cuts, the one giving most parts
    wins (Q5: the nation key, which three relations share), then the one with the fewest map
    keys in all (a cut on a variable the statement needs anyway adds none)."""
    from itertools import combinations
    if len(atoms) < 2 or anchored(atoms, known):
        return None
    if any(isinstance(f, Lift) or relations(f) for f in extras):
        return None
    occurrences: dict = {}
    for a in atoms:
        for v in dict.fromkeys(a.vars):
            if v not in known:
                occurrences[v] = occurrences.get(v, 0) + 1
    join_vars = [v for v, n in occurrences.items() if n >= 2]
    for size in range(1, max_cut + 1):
        best = None
        for cut in combinations(join_vars, size):
            parts = components(atoms, set(known) | set(cut))
            if len(parts) < 2 or not all(anchored(p, known) for p in parts):
                continue
            homes = _extra_homes(parts, extras)
            if homes is None:
                continue
            keys = set(known) | set(cut) | set(needed)
            width = sum(len(_atom_vars(p) & keys) for p in parts)
            score = (-len(parts), width)
            if best is None or score < best[0]:
                best = (score, cut, [(p, h) for p, h in zip(parts, homes)])
        if best is not None:
            return best[1], best[2]
    return None


def _extra_homes(parts, extras):
    """Each extra factor in the first part whose atoms hold all its variables; None if one has none."""
    homes = [[] for _ in parts]
    for f in extras:
        fv = all_vars(f)
        part = next((i for i, p in enumerate(parts) if fv <= _atom_vars(p)), None)
        if part is None:
            return None
        homes[part].append(f)
    return homes


def join_degrees(definitions) -> dict:
    """(relation, column index) -> how many relation atoms of the query share the variable in
    that column (at most, over the definitions): Q5's nation key columns 3, its order keys 2."""
    out: dict = {}
    for d in definitions:
        for rels in _atom_groups(d):
            for a in rels:
                for i, v in enumerate(a.vars):
                    n = sum(v in b.vars for b in rels)
                    out[(a.name, i)] = max(out.get((a.name, i), 0), n)
    return out


def _atom_groups(e) -> list:
    """The relation atoms of e, one list per monomial-like product (sums split)."""
    match e:
        case Rel():
            return [[e]]
        case Sum(ts):
            return [g for t in ts for g in _atom_groups(t)]
        case Prod(fs):
            groups = [[]]
            for f in fs:
                sub = _atom_groups(f)
                if sub:
                    groups = [g + h for g in groups for h in sub][:64]
            return groups
        case AggSum(_, q) | Lift(_, q):
            return _atom_groups(q)
    return []


def binding_order(refs, bound, atoms, degrees) -> list:
    """Map references in an order that binds variables early: lookups and slices on bound
    variables before scans (a product is evaluated left to right, each factor with the
    variables of the ones before it bound). Between two slices, the one on a variable in columns
    that fewer relations of the query join on comes first: a column many relations share (Q5's
    nation key: CUSTOMER, SUPPLIER, NATION) is a dimension with few values, whose slices are
    long; an order key's or customer key's slice is a few rows."""
    def degree(v):
        return max((degrees.get((a.name, i), 0) for a in atoms for i, x in enumerate(a.vars) if x == v),
                   default=0)
    out, bound, rest = [], set(bound), list(refs)
    while rest:
        def score(r):
            on = set(r.vars) & bound
            return (bool(on), -len(set(r.vars) - bound), -min((degree(v) for v in on), default=0))
        best = max(rest, key=score)
        rest.remove(best)
        out.append(best)
        bound |= set(best.vars)
    return out
