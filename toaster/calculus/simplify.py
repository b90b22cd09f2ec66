"""Simplification of calculus expressions (VLDBJ'14 §5.3).

* polynomial expansion into a sum of monomials (products of non-sum factors),
* partial evaluation: constants folded into one coefficient per monomial, zeros dropped,
* unification: equalities and lifts of simple values turned into variable substitutions,
  eliminating the variable when it is local to the monomial,
* like monomials combined (their coefficients added).

A monomial is kept as (coefficient, factors) with factors in a canonical order: relation and
delta atoms, map references, lifts, comparisons, then values. Reordering factors of a product
is sound here because every factor that needs a variable only reads it after the atoms (which
bind it) have run, and a lift of a variable that an atom already bound acts as an equality test.
"""
from __future__ import annotations

from toaster.recursion import deep
import itertools
from dataclasses import dataclass

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Extremum, Func, Lift, MapRef, Prod, Rel,
                                 Sum, Value, Var, ZERO, all_vars, mk_prod, mk_sum, relations, schema,
                                 term_vars)
from toaster.calculus.toposort import lexicographic_topological_order
from toaster.types import FLOAT, INT

_FRESH = itertools.count(1)


# ------------------------------------------------------------------ substitution

def subst_term(t, s: dict):
    match t:
        case Var():
            return s.get(t, t)
        case Const():
            return t
        case Arith(op, args, ty):
            return Arith(op, tuple(subst_term(a, s) for a in args), ty)
        case Func(n, args, ty):
            return Func(n, tuple(subst_term(a, s) for a in args), ty)
    raise TypeError(t)


def subst(e, s: dict):
    """Substitute variables in e. Atoms (relations, maps) only take variables."""
    if not s:
        return e
    match e:
        case Rel(n, vs):
            return Rel(n, tuple(_var_only(s.get(v, v)) for v in vs))
        case DeltaRel(n, vs):
            return DeltaRel(n, tuple(_var_only(s.get(v, v)) for v in vs))
        case MapRef(n, vs, t):
            return MapRef(n, tuple(_var_only(s.get(v, v)) for v in vs), t)
        case Value(t):
            return Value(subst_term(t, s))
        case Cmp(op, a, b):
            return Cmp(op, subst_term(a, s), subst_term(b, s))
        case Lift(v, q):
            return Lift(_var_only(s.get(v, v)), subst(q, s))
        case Sum(ts):
            return Sum(tuple(subst(t, s) for t in ts))
        case Prod(fs):
            return Prod(tuple(subst(f, s) for f in fs))
        case AggSum(gs, q):
            return AggSum(tuple(_var_only(s.get(g, g)) for g in gs), subst(q, s))
        case Extremum(kind, gs, t, q):
            return Extremum(kind, tuple(_var_only(s.get(g, g)) for g in gs), subst_term(t, s), subst(q, s))
    raise TypeError(e)


def _var_only(v):
    if not isinstance(v, Var):
        raise ValueError(f"cannot substitute {v!r} into an atom position")
    return v


# --------------------------------------------------------------- constant folding

_CMP = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def fold_term(t):
    """Fold arithmetic over constants (division is left alone: IEEE results stay runtime's)."""
    match t:
        case Arith(op, args, ty):
            args = tuple(fold_term(a) for a in args)
            if op != "/" and all(isinstance(a, Const) and a.type in (INT, FLOAT) for a in args):
                vals = [a.value for a in args]
                if op == "neg":
                    v = -vals[0]
                elif op == "+":
                    v = sum(vals)
                elif op == "-":
                    v = vals[0] - vals[1]
                else:
                    v = 1
                    for x in vals:
                        v *= x
                return Const(float(v) if ty == FLOAT else int(v), ty)
            return Arith(op, args, ty)
        case Func(n, args, ty):
            return Func(n, tuple(fold_term(a) for a in args), ty)
    return t


def _const_number(e):
    if isinstance(e, Value) and isinstance(e.term, Const) and e.term.type in (INT, FLOAT):
        return e.term.value
    return None


# ---------------------------------------------------------------------- monomials

@dataclass(frozen=True)
class Monomial:
    coef: object          # int or float
    factors: tuple        # canonical order, no Sum, no numeric constants

    def to_expr(self):
        if self.coef == 0:
            return ZERO
        c = [] if self.coef == 1 else [Value(Const(self.coef, FLOAT if isinstance(self.coef, float) else INT))]
        return mk_prod(c + list(self.factors))


def expand(e) -> list:
    """e as a list of factor lists whose sum equals e (polynomial expansion)."""
    match e:
        case Sum(ts):
            out = []
            for t in ts:
                out.extend(expand(t))
            return out
        case Prod(fs):
            out = [[]]
            for f in fs:
                fm = expand(f)
                out = [a + b for a in out for b in fm]
            return out
        # nested aggregates stay whole here (simplify_monomials unnests sums; normalize()
        # simplifies the rest once it knows which variables the monomial binds)
    return [[e]]


_ORDER = {DeltaRel: 0, Rel: 1, MapRef: 2, AggSum: 3, Extremum: 3, Lift: 4, Cmp: 5, Value: 6}


def _sort_key(f):
    from toaster.calculus.printer import print_expr
    return (_ORDER.get(type(f), 9), print_expr(f))


def _atom_vars(factors) -> set:
    out = set()
    for f in factors:
        if isinstance(f, (Rel, DeltaRel, MapRef)):
            out |= set(f.vars)
    return out


def normalize(factors, keep: frozenset | set, bound: frozenset | set | None = None) -> Monomial | None:
    """Fold constants and unify; `keep` are variables visible outside (group-by, bound), and
    `bound` those of them bound outside (None: assume all of `keep` may be).
    Returns None when the monomial is zero."""
    coef = 1
    fs = []
    for f in factors:
        if isinstance(f, Value):
            f = Value(fold_term(f.term))
        elif isinstance(f, Cmp):
            f = Cmp(f.op, fold_term(f.left), fold_term(f.right))
        c = _const_number(f)
        if c is not None:
            coef = coef * c
            continue
        if isinstance(f, Cmp) and isinstance(f.left, Const) and isinstance(f.right, Const):
            if not _CMP[f.op](f.left.value, f.right.value):
                return None
            continue
        fs.append(f)
    if coef == 0:
        return None
    changed = True
    while changed:
        changed = False
        for i, f in enumerate(fs):
            s = _unifier(f, fs, keep)
            if s is None:
                continue
            rest = [subst(g, s) for g in fs[:i] + fs[i + 1:]]
            if any(isinstance(g, Lift) and g.var in all_vars(g.expr) for g in rest):
                continue  # x := Q(x) would read the variable it defines
            fs = rest
            # a lift of a variable that is now bound elsewhere is an equality test
            changed = True
            break
        if not changed:
            for i, f in enumerate(fs):
                if isinstance(f, Cmp) and f.op == "=" and f.left == f.right:
                    fs = fs[:i] + fs[i + 1:]
                    changed = True
                    break
                if isinstance(f, Cmp) and isinstance(f.left, Const) and isinstance(f.right, Const):
                    if not _CMP[f.op](f.left.value, f.right.value):
                        return None
                    fs = fs[:i] + fs[i + 1:]
                    changed = True
                    break
    fs = [_simplify_nested(f, set(keep) | _vars_outside(f, fs)) for f in fs]
    if any(lifts_empty_groups(f, fs, keep if bound is None else bound) for f in fs):
        return None
    return Monomial(coef, tuple(_order(fs)))


def lifts_empty_groups(f, fs, bound) -> bool:
    """Is f a lift over a grouped sum of zero whose group variables nothing else binds (nor
    the context: `bound`)? It iterates over the groups of an empty relation, so the monomial
    is zero (a FROM subquery whose WHERE folded to false leaves such a lift). A group variable
    that is only an output of the enclosing sum is not bound: the lift was to bind it."""
    if not (isinstance(f, Lift) and isinstance(f.expr, AggSum) and f.expr.group):
        return False
    body = f.expr.expr
    if not (_const_number(body) == 0):
        return False
    bound_elsewhere = set(bound)
    for g in fs:
        if g is not f:
            bound_elsewhere |= schema(g)[1]
    return any(v not in bound_elsewhere for v in f.expr.group)


def _binding_vars(e) -> set:
    """Variables in atom or lift positions anywhere in e (only variables may go there)."""
    match e:
        case Rel(_, vs) | DeltaRel(_, vs) | MapRef(_, vs, _):
            return set(vs)
        case Lift(v, q):
            return {v} | _binding_vars(q)
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= _binding_vars(t)
            return out
        case AggSum(gs, q) | Extremum(_, gs, _, q):
            return set(gs) | _binding_vars(q)
    return set()


def _vars_outside(f, fs) -> set:
    out = set()
    for g in fs:
        if g is not f:
            out |= all_vars(g)
    return out


def _simplify_nested(f, visible: set):
    """Simplify inside a nested factor; `visible` variables are bound or read around it."""
    match f:
        case AggSum(gs, q):
            return AggSum(gs, _simplified(q, set(gs) | visible))
        case Lift(v, q) if not isinstance(q, Value):
            return Lift(v, _simplified(q, visible))
        case Extremum(kind, gs, t, q):
            return Extremum(kind, gs, t, _simplified(q, set(gs) | term_vars(t) | visible))
    return f


def _simplified(q, keep: set):
    if isinstance(q, AggSum):
        inner = q.expr
        # Sum_[g1](Sum_[g2](Q)) = Sum_[g1](Q) when g1 is within g2
        while isinstance(inner, AggSum) and set(q.group) <= set(inner.group):
            inner = inner.expr
        return AggSum(q.group, _simplified(inner, set(q.group) | keep))
    return mk_sum([m.to_expr() for m in simplify_monomials(q, keep)])


def _order(fs: list) -> list:
    """Canonical factor order (atoms, maps, lifts, conditions, values; then by text) that keeps
    a factor after the factors that bind a variable it reads without binding it: under
    sideways binding passing, moving it before them would change what it means (a nested
    aggregate would sum over that variable instead of reading it)."""
    from toaster.calculus.ir import schema
    outs = [schema(f)[1] for f in fs]
    allv = [all_vars(f) for f in fs]
    edges = [(i, j) for i in range(len(fs)) for j in range(i + 1, len(fs)) if outs[i] & (allv[j] - outs[j])]
    keys = [_sort_key(f) for f in fs]
    return [fs[i] for i in lexicographic_topological_order(len(fs), edges, key=keys.__getitem__)]


def _unifier(f, fs, keep) -> dict | None:
    """A substitution that eliminates factor f, or None.

    Only variables not visible outside the monomial (not in `keep`) are substituted away.
    A variable may be replaced by another variable anywhere; by a general term only where it
    is not an atom argument nor defined by another lift (atoms and lifts take variables).
    """
    others = [g for g in fs if g is not f]
    pinned = set()
    for g in others:
        pinned |= _binding_vars(g)
    match f:
        case Lift(x, Value(t)) if isinstance(t, Var):
            if x == t:
                return {}
            if x not in keep:
                return {x: t}
            if t not in keep:
                return {t: x}
        case Lift(x, Value(t)):
            if x not in keep and x not in pinned and x not in term_vars(t):
                return {x: t}
        case Cmp("=", a, b) if isinstance(a, Var) and isinstance(b, Var):
            if a == b:
                return {}
            if a.type != b.type:
                return None
            if a not in keep:
                return {a: b}
            if b not in keep:
                return {b: a}
        case Cmp("=", a, b) if isinstance(a, Var) and a.type == b.type:
            if a not in keep and a not in pinned and a not in term_vars(b):
                return {a: b}
        case Cmp("=", a, b) if isinstance(b, Var) and b.type == a.type:
            if b not in keep and b not in pinned and b not in term_vars(a):
                return {b: a}
    return None


def combine(monos) -> list:
    """Add up the coefficients of monomials with equal factors; drop zeros."""
    acc: dict = {}
    order = []
    for m in monos:
        if m.factors not in acc:
            acc[m.factors] = 0
            order.append(m.factors)
        acc[m.factors] = acc[m.factors] + m.coef
    return [Monomial(acc[f], f) for f in order if acc[f] != 0]


@deep("the calculus expression (simplify_calc)")
def simplify_monomials(e, keep, bound=None) -> list:
    """e (no outer AggSum) -> simplified, combined list of Monomials. `keep`: the variables
    visible outside; `bound`: those of them bound outside (None: any of `keep` may be)."""
    out = []
    work = expand(e)
    while work:
        fs = work.pop(0)
        i = next((i for i, f in enumerate(fs) if isinstance(f, AggSum) and relations(f.expr)), None)
        if i is not None:
            work[:0] = _unnest(fs, i, keep)
            continue
        m = normalize(fs, frozenset(keep), None if bound is None else frozenset(bound))
        if m is not None:
            out.append(m)
    return combine(out)


def _unnest(fs: list, i: int, keep) -> list:
    """A sum inside a product is unnested: Sum_gs(Q) * R = Sum(Q * R) when R does not read
    Q's other variables. Q's variables that nothing outside it reads are renamed apart first,
    so two copies of one subquery stay independent."""
    f = fs[i]
    outside = set(keep)
    for j, g in enumerate(fs):
        if j != i:
            outside |= _free_vars(g)
    local = all_vars(f.expr) - set(f.group) - outside
    ren = {v: Var(f"{v.name}_{next(_FRESH)}", v.type) for v in sorted(local, key=lambda v: v.name)}
    return [fs[:i] + sub + fs[i + 1:] for sub in expand(subst(f.expr, ren))]


def _free_vars(f) -> set:
    """Variables of a factor visible to its neighbours (an AggSum hides the ones it sums over)."""
    if isinstance(f, AggSum):
        return set(f.group) | (all_vars(f.expr) - schema(f.expr, set())[1])
    return all_vars(f)


def simplify_expr(e, bound=frozenset()):
    """Simplify an expression; `bound` are variables bound outside it."""
    match e:
        case AggSum(gs, q):
            monos = simplify_monomials(q, set(gs) | set(bound), bound)
            return mk_sum([_agg(gs, m.to_expr()) for m in monos])
    monos = simplify_monomials(e, set(bound) | all_vars(e))
    return mk_sum([m.to_expr() for m in monos])


def _agg(gs, body):
    if body == ZERO:
        return ZERO
    return AggSum(tuple(gs), body)
