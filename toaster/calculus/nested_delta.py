"""The revised delta rule for nested aggregates (VLDBJ'14 §5.3; Hot Dog §3.2.2).

The plain rule Δ(x := Q) = (x := Q + ΔQ) - (x := Q) re-evaluates the outer query twice for
every binding of Q's correlation variables. When the update binds a correlation variable
through an equality, only the bindings it names can change, and the rule becomes

  single tuple:  Δ(x := Q) = (ΔQ)_rr * ((x := Q + (ΔQ)_e) - (x := Q))
                 where (ΔQ)_rr are the equalities `correlation var = trigger arg` common to
                 every monomial of ΔQ and (ΔQ)_e the rest;
  batch:         Δ(x := Q) = Q_dom * ((x := Q + ΔQ) - (x := Q))
                 where Q_dom binds each correlation variable that the delta relation fixes to
                 the distinct values it takes in the batch, with multiplicity 1 (domain
                 extraction: Exists(Sum_[vars](Exists(ΔR) * conditions on ΔR))).

When ΔQ binds none of the correlation variables (an uncorrelated or inequality-correlated
nested aggregate), no restriction exists and the compiler re-evaluates the map instead
(NotRangeRestricted tells it so).
"""
from __future__ import annotations

from toaster.calculus.ir import (AggSum, Cmp, DeltaRel, Lift, MapRef, Prod, Rel, Sum, Value, Var, all_vars,
                                 mk_prod, mk_sum, neg, relations)
from toaster.calculus.simplify import Monomial, simplify_monomials
from toaster.types import INT


class NotRangeRestricted(Exception):
    """The nested aggregate's delta binds none of its correlation variables."""


def revised_lift_delta(x, q, d, event, corr: set, join_domains: bool = False):
    """Δ(x := q) for the event, given d = Δq (not zero); `corr` are q's correlation variables
    (bound outside q)."""
    group = tuple(q.group) if isinstance(q, AggSum) else ()
    corr = set(corr) - {x}   # a group variable bound outside is a correlation too
    if not corr:
        raise NotRangeRestricted(f"{x.name} := ... is not correlated with the outer query")
    body = d.expr if isinstance(d, AggSum) else d
    while isinstance(body, AggSum) and set(group) <= set(body.group):
        body = body.expr   # Sum_[g](Sum_[g2](Q)) = Sum_[g](Q) for g within g2
    monos = simplify_monomials(body, set(corr) | set(group) | set(event.args))
    if not monos:
        return None  # the delta is zero after simplification
    try:
        if event.kind == "batch":
            restriction = _batch_domain(monos, corr, x)
            new_body = mk_sum([_body(q), body])
        else:
            restriction, rest = _tuple_restriction(monos, corr, event)
            new_body = mk_sum([_body(q), mk_sum(rest)])
    except NotRangeRestricted:
        if not join_domains:
            raise
        restriction = _join_domain(monos, corr, x, set(event.args))
        new_body = mk_sum([_body(q), body])
    updated = AggSum(group, new_body) if isinstance(q, AggSum) else new_body
    return mk_prod(restriction + [mk_sum([Lift(x, updated), neg(Lift(x, q))])])


def _body(q):
    return q.expr if isinstance(q, AggSum) else q


def _tuple_restriction(monos, corr, event):
    """(ΔQ)_rr as comparisons and (ΔQ)_e as expressions (one per monomial)."""
    args = set(event.args)
    common = None
    for m in monos:
        found = {f for f in m.factors if _binds_correlation(f, corr, args)}
        common = found if common is None else common & found
    if not common:
        raise NotRangeRestricted("the update binds none of the correlation variables")
    rr = sorted(common, key=repr)
    rest = [Monomial(m.coef, tuple(f for f in m.factors if f not in common)).to_expr() for m in monos]
    return [_as_cmp(f) for f in rr], rest


def _binds_correlation(f, corr, args) -> bool:
    match f:
        case Cmp("=", Var() as a, Var() as b):
            return (a in corr and b in args) or (b in corr and a in args)
        case Lift(v, Value(Var() as a)):
            return v in corr and a in args
    return False


def _as_cmp(f):
    return Cmp("=", f.var, f.expr.term) if isinstance(f, Lift) else f


def _batch_domain(monos, corr, x) -> list:
    """Q_dom for a batched delta: the correlation variables every monomial's delta atoms bind."""
    fixed = None
    for m in monos:
        delta_vars = set()
        for f in m.factors:
            if isinstance(f, DeltaRel):
                delta_vars |= set(f.vars)
        here = set(corr) & delta_vars
        fixed = here if fixed is None else fixed & here
    if not fixed:
        raise NotRangeRestricted("the delta relation binds none of the correlation variables")
    dom_vars = tuple(sorted(fixed, key=lambda v: v.name))
    parts = []
    for m in monos:
        atoms = [f for f in m.factors if isinstance(f, DeltaRel)]
        atom_vars = set().union(*(set(a.vars) for a in atoms))
        # Exists(ΔR): one per distinct tuple of the batch, whatever its net multiplicity
        exists = [Lift(Var(f"EX_{x.name}_{i}", INT), a) for i, a in enumerate(atoms, 1)]
        # conditions on the batch alone make the domain tighter (Hot Dog Example 3.2)
        conds = [f for f in m.factors if isinstance(f, Cmp) and all_vars(f) <= atom_vars]
        parts.append(AggSum(dom_vars, mk_prod(exists + conds)))
    # the outer lift keeps one binding per distinct domain tuple (multiplicity 1)
    return [Lift(Var(f"DOM_{x.name}", INT), mk_sum(parts))]


def _join_domain(monos, corr, x, args) -> list:
    """Q_dom where the update reaches the correlation variables only through a join (an outer
    join's NOT EXISTS over a padded join, `R JOIN S ... RIGHT JOIN T ON S.C = T.C` updated in
    R): the correlation values each monomial of ΔQ has rows for, read from its relation atoms
    (each tuple once, Exists(ΔR) in a batch) and the conditions over them -- a superset of
    where ΔQ is nonzero, with multiplicity 1."""
    fixed, parts = None, []
    for i, m in enumerate(monos, 1):
        atoms = [f for f in m.factors if isinstance(f, (Rel, DeltaRel))]
        bound = set(args).union(*(set(a.vars) for a in atoms))
        here = set(corr) & bound - set(args)
        fixed = here if fixed is None else fixed & here
        rows = [Lift(Var(f"EX_{x.name}_{i}_{j}", INT), a) if isinstance(a, DeltaRel) else a
                for j, a in enumerate(atoms, 1)]
        parts.append((rows, [f for f in m.factors if isinstance(f, Cmp) and all_vars(f) <= bound]))
    if not fixed:
        raise NotRangeRestricted("the update reaches none of the correlation variables")
    dom_vars = tuple(sorted(fixed, key=lambda v: v.name))
    return [Lift(Var(f"DOM_{x.name}", INT), mk_sum([AggSum(dom_vars, mk_prod(rows + conds))
                                                  for rows, conds in parts]))]


def is_domain(f) -> bool:
    """Is f a batch domain factor (a lift over delta relations only: no relation, no map)?"""
    return (isinstance(f, Lift) and not relations(f.expr) and _reads(f.expr, DeltaRel)
            and not _reads(f.expr, MapRef))


def _reads(e, atom) -> bool:
    """Does e contain an atom of class `atom` (DeltaRel, MapRef)?"""
    match e:
        case Lift(_, q) | AggSum(_, q):
            return _reads(q, atom)
        case Sum(ts) | Prod(ts):
            return any(_reads(t, atom) for t in ts)
    return isinstance(e, atom)
