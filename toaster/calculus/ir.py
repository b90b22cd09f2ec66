"""AGCA calculus IR (VLDBJ'14 §3.2): immutable nodes, n-ary sums and products.

Two layers:
  * value terms (scalars): Var, Const, Arith, Func
  * calculus expressions (GMR-valued): Rel, DeltaRel, MapRef, Value, Cmp, Lift,
    Sum, Prod, AggSum

Semantics (evaluated by toaster.calculus.evaluator): an expression, under a binding of its
input variables, denotes a finite map from bindings of its output variables to ring values.
  Rel(R, vs)        multiplicity of each tuple of R, binding vs (bound vs act as filters)
  DeltaRel(R, vs)   the same over the current batch of updates to R (batch triggers)
  MapRef(m, vs)     the value stored in materialized map m (M3 programs)
  Value(t)          the scalar t (all its variables must be bound)
  Cmp(op, a, b)     1 if the comparison holds else 0
  Lift(x, Q)        x := Q ; binds x to Q's value (or checks it when x is bound)
  Sum(ts)           bag union (sum of values per binding)
  Prod(fs)          natural join, evaluated left to right (sideways binding passing)
  AggSum(gs, Q)     sum of Q's values grouped by the variables gs
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Union

from toaster.calculus.cached_hash import HashOnce, cached_hash
from toaster.types import Type, INT, FLOAT


# ---------------------------------------------------------------- value terms

@cached_hash
@dataclass(frozen=True, slots=True)
class Var(HashOnce):
    name: str
    type: Type

    def __repr__(self) -> str:
        return f"{self.name}:{self.type}"


@cached_hash
@dataclass(frozen=True, slots=True)
class Const(HashOnce):
    value: object  # int | float | str | bool; dates are int YYYYMMDD
    type: Type


@cached_hash
@dataclass(frozen=True, slots=True)
class Arith(HashOnce):
    """op in '+', '*' (n-ary), '-', '/' (binary), 'neg' (unary). Result type in .type."""
    op: str
    args: tuple
    type: Type


@cached_hash
@dataclass(frozen=True, slots=True)
class Func(HashOnce):
    """A built-in or external scalar function call."""
    name: str
    args: tuple
    type: Type


Term = Union[Var, Const, Arith, Func]


# ---------------------------------------------------------- calculus expressions

@cached_hash
@dataclass(frozen=True, slots=True)
class Rel(HashOnce):
    name: str
    vars: tuple  # tuple[Var, ...]


@cached_hash
@dataclass(frozen=True, slots=True)
class DeltaRel(HashOnce):
    name: str
    vars: tuple


@cached_hash
@dataclass(frozen=True, slots=True)
class MapRef(HashOnce):
    name: str
    vars: tuple
    type: Type = FLOAT  # the map's value type


@cached_hash
@dataclass(frozen=True, slots=True)
class Value(HashOnce):
    term: object  # Term


@cached_hash
@dataclass(frozen=True, slots=True)
class Cmp(HashOnce):
    op: str  # '=', '!=', '<', '<=', '>', '>='
    left: object
    right: object


@cached_hash
@dataclass(frozen=True, slots=True)
class Lift(HashOnce):
    var: Var
    expr: object  # Expr


@cached_hash
@dataclass(frozen=True, slots=True)
class Sum(HashOnce):
    terms: tuple


@cached_hash
@dataclass(frozen=True, slots=True)
class Prod(HashOnce):
    factors: tuple


@cached_hash
@dataclass(frozen=True, slots=True)
class AggSum(HashOnce):
    group: tuple  # tuple[Var, ...]
    expr: object


@cached_hash
@dataclass(frozen=True, slots=True)
class Extremum(HashOnce):
    """kind 'min' | 'max' of `term` over the bindings of `expr` with positive multiplicity,
    grouped by `group` as in AggSum (nested MIN/MAX; the value may be any scalar type, so it
    is only used as the source of a Lift)."""
    kind: str
    group: tuple
    term: object
    expr: object


Expr = Union[Rel, DeltaRel, MapRef, Value, Cmp, Lift, Sum, Prod, AggSum, Extremum]

ZERO = Value(Const(0, INT))
ONE = Value(Const(1, INT))


def const_value(e) -> object | None:
    """The constant number an expression denotes, or None."""
    if isinstance(e, Value) and isinstance(e.term, Const) and e.term.type in (INT, FLOAT):
        return e.term.value
    return None


def is_zero(e) -> bool:
    return const_value(e) == 0


def is_one(e) -> bool:
    return const_value(e) == 1


# --------------------------------------------------------------------- queries

def term_vars(t) -> set:
    """Variables occurring in a value term."""
    match t:
        case Var():
            return {t}
        case Const():
            return set()
        case Arith(_, args, _) | Func(_, args, _):
            out = set()
            for a in args:
                out |= term_vars(a)
            return out
    raise TypeError(f"not a value term: {t!r}")


def term_type(t) -> Type:
    return t.type


def all_vars(e) -> set:
    """Every variable occurring anywhere in e."""
    match e:
        case Rel(_, vs) | DeltaRel(_, vs) | MapRef(_, vs, _):
            return set(vs)
        case Value(t):
            return term_vars(t)
        case Cmp(_, a, b):
            return term_vars(a) | term_vars(b)
        case Lift(v, q):
            return {v} | all_vars(q)
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= all_vars(t)
            return out
        case AggSum(gs, q):
            return set(gs) | all_vars(q)
        case Extremum(_, gs, t, q):
            return set(gs) | term_vars(t) | all_vars(q)
    raise TypeError(f"not a calculus expression: {e!r}")


def schema(e, bound: frozenset | set = frozenset()) -> tuple[set, set]:
    """(input vars, output vars) of e given the variables already bound outside.

    Output variables are the ones e binds (relation columns, lifted variables, group-by
    variables); input variables are those e needs bound from outside.
    """
    bound = set(bound)
    match e:
        case Rel(_, vs) | DeltaRel(_, vs) | MapRef(_, vs, _):
            return set(), set(vs) - bound
        case Value(t):
            return term_vars(t) - bound, set()
        case Cmp(_, a, b):
            return (term_vars(a) | term_vars(b)) - bound, set()
        case Lift(v, q):
            qi, qo = schema(q, bound)
            return qi, (qo | {v}) - bound
        case Prod(fs):
            ins, outs = set(), set()
            for f in fs:
                fi, fo = schema(f, bound | outs)
                ins |= fi - outs
                outs |= fo
            return ins, outs
        case Sum(ts):
            ins, outs = set(), set()
            for t in ts:
                ti, to = schema(t, bound)
                ins |= ti
                outs |= to
            return ins, outs
        case AggSum(gs, q) | Extremum(_, gs, _, q):
            qi, qo = schema(q, bound)
            if isinstance(e, Extremum):
                qi = qi | (term_vars(e.term) - qo - bound)
            return qi, set(gs) & (qo | bound) - bound
    raise TypeError(f"not a calculus expression: {e!r}")


def expr_type(e) -> Type:
    """The ring type of an expression's values: INT unless a float is involved."""
    match e:
        case Rel() | DeltaRel() | Cmp():
            return INT
        case MapRef(_, _, t):
            return t
        case Value(t):
            return FLOAT if t.type == FLOAT else INT
        case Lift():
            return INT
        case Sum(ts) | Prod(ts):
            return FLOAT if any(expr_type(t) == FLOAT for t in ts) else INT
        case AggSum(_, q):
            return expr_type(q)
        case Extremum(_, _, t, _):
            return t.type
    raise TypeError(f"not a calculus expression: {e!r}")


def relations(e) -> set:
    """Names of base relations referenced by e (not deltas or maps)."""
    match e:
        case Rel(n, _):
            return {n}
        case DeltaRel() | MapRef() | Value() | Cmp():
            return set()
        case Lift(_, q) | AggSum(_, q) | Extremum(_, _, _, q):
            return relations(q)
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= relations(t)
            return out
    raise TypeError(f"not a calculus expression: {e!r}")



def subterms(e):
    """e and every expression nested in it, pre-order (Value/Cmp leaves are not entered)."""
    yield e
    match e:
        case Prod(fs) | Sum(fs):
            for f in fs:
                yield from subterms(f)
        case AggSum(_, q) | Lift(_, q) | Extremum(_, _, _, q):
            yield from subterms(q)

def mk_sum(terms) -> object:
    """Sum with flattening and zero elimination (not a full simplifier)."""
    flat = []
    for t in terms:
        if isinstance(t, Sum):
            flat.extend(t.terms)
        elif not is_zero(t):
            flat.append(t)
    if not flat:
        return ZERO
    return flat[0] if len(flat) == 1 else Sum(tuple(flat))


def mk_prod(factors) -> object:
    """Product with flattening, unit elimination and zero absorption."""
    flat = []
    for f in factors:
        if isinstance(f, Prod):
            flat.extend(f.factors)
        elif is_zero(f):
            return ZERO
        elif not is_one(f):
            flat.append(f)
    if not flat:
        return ONE
    return flat[0] if len(flat) == 1 else Prod(tuple(flat))


def neg(e) -> object:
    return mk_prod([Value(Const(-1, INT)), e])


# casts that fail on some strings ('' is no date). A NULL string holds '' (its placeholder) and
# the product computing such a cast holds its NULL guard, maybe after it (products are in
# canonical order): every engine evaluates a product's bound comparisons first (guards_first).
FALLIBLE_CASTS = frozenset(("cast_date", "cast_float", "cast_int"))


@functools.lru_cache(maxsize=8192)      # nodes cache their hashes
def may_fail(f) -> bool:
    """Whether the factor f computes a cast that can fail (in a lift, value or comparison)."""
    def calls(t) -> bool:
        match t:
            case Func(name, args, _):
                return name in FALLIBLE_CASTS or any(calls(a) for a in args)
            case Arith(_, args, _):
                return any(calls(a) for a in args)
        return False
    match f:
        case Cmp(_, a, b):
            return calls(a) or calls(b)
        case Lift(_, Value(t)) | Value(t):
            return calls(t)
    return False


def guards_first(fs, bound) -> tuple:
    """The factors fs of a product with every comparison that cannot fail and whose variables
    are bound moved before the first factor that can fail (the product's value is the same)."""
    if not any(may_fail(f) for f in fs):
        return tuple(fs)
    out, rest, known = [], list(fs), set(bound)
    while rest:
        f = rest.pop(0)
        if may_fail(f):
            ready = [g for g in rest if isinstance(g, Cmp) and not may_fail(g) and all_vars(g) <= known]
            out += ready
            rest = [g for g in rest if not any(g is r for r in ready)]
        out.append(f)
        known |= schema(f, known)[1]
    return tuple(out)
