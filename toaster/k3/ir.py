"""K3: a functional collection IR between M3 and the imperative IR (VLDBJ'14 §7, Fig. 6).

Values are scalars (toaster.types.Type), tuples, and collections (bags) of tuples or of
collections. Persistent maps (the M3 views, the per-trigger temp maps and the DELTA_<REL>
batch maps) are read with Lookup (value at a full key, 0 when absent) and Slice (the bag of
entries `(k1, .., kn, value)` whose key matches a partial pattern; zero entries are skipped)
and written by the statements Update (`m[keys] += v`), Replace (`m := bag`) and Clear.

Functions are Lambdas whose parameters destructure their argument: a lambda applied to a
tuple element binds one parameter per field; the fold functions of Aggregate and
GroupByAggregate take the accumulator first, then the element's fields. Apply(Lambda, args)
with one argument per parameter is a `let`.

Collection operators:
  Map(f, c)                        bag of f(e) for e in c
  Filter(p, c)                     the elements of c with p(e) true
  Flatten(c)                       union of the bags in the bag of bags c
  Union(parts)                     bag union
  Aggregate(f, init, c)            fold: acc = init; acc = f(acc, e) for e in c (a scalar)
  GroupByAggregate(g, f, init, c)  bag of (k.., fold of f over the elements e with g(e) = k)
  Iterate(f, c)                    statement: run the statement f(e) for each e in c
All nodes are immutable; types are carried by leaves and computed with `type_of`.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.types import Type, INT, FLOAT, BOOL


# --------------------------------------------------------------------- types

@dataclass(frozen=True, slots=True)
class TupleType:
    elems: tuple

    def __str__(self) -> str:
        return "<" + ", ".join(str(t) for t in self.elems) + ">"


@dataclass(frozen=True, slots=True)
class CollType:
    elem: object  # TupleType | CollType

    def __str__(self) -> str:
        return "{" + str(self.elem) + "}"


UNIT = TupleType(())


# --------------------------------------------------------------------- scalars

@dataclass(frozen=True, slots=True)
class Var:
    name: str
    type: object


@dataclass(frozen=True, slots=True)
class Const:
    value: object
    type: Type


@dataclass(frozen=True, slots=True)
class BinOp:
    """'+', '-', '*', '/', comparisons '=', '!=', '<', '<=', '>', '>=', logic 'and', 'or'."""
    op: str
    left: object
    right: object
    type: Type


@dataclass(frozen=True, slots=True)
class Not:
    arg: object


@dataclass(frozen=True, slots=True)
class Cast:
    type: Type
    arg: object


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple
    type: Type


@dataclass(frozen=True, slots=True)
class Lookup:
    """map[keys], 0 when absent."""
    map: str
    keys: tuple
    type: Type


@dataclass(frozen=True, slots=True)
class Tuple:
    elems: tuple


@dataclass(frozen=True, slots=True)
class Project:
    arg: object
    index: int


@dataclass(frozen=True, slots=True)
class Lambda:
    params: tuple  # tuple[Var, ...]
    body: object


@dataclass(frozen=True, slots=True)
class Apply:
    fn: Lambda
    args: tuple


@dataclass(frozen=True, slots=True)
class IfThenElse:
    cond: object
    then: object
    orelse: object


# ----------------------------------------------------------------- collections

@dataclass(frozen=True, slots=True)
class Empty:
    type: CollType


@dataclass(frozen=True, slots=True)
class Singleton:
    elem: object


@dataclass(frozen=True, slots=True)
class Union:
    parts: tuple


@dataclass(frozen=True, slots=True)
class Slice:
    """Entries (k1, .., kn, value) of map whose key matches pattern (None = any)."""
    map: str
    pattern: tuple
    key_types: tuple
    value_type: Type


@dataclass(frozen=True, slots=True)
class Map:
    fn: Lambda
    coll: object


@dataclass(frozen=True, slots=True)
class Filter:
    fn: Lambda
    coll: object


@dataclass(frozen=True, slots=True)
class Flatten:
    coll: object


@dataclass(frozen=True, slots=True)
class Aggregate:
    fn: Lambda     # params (acc, *fields)
    init: object
    coll: object


@dataclass(frozen=True, slots=True)
class GroupByAggregate:
    group: Lambda  # params (*fields) -> Tuple of keys
    fn: Lambda     # params (acc, *fields)
    init: object
    coll: object


# ------------------------------------------------------------------ statements

@dataclass(frozen=True, slots=True)
class Iterate:
    fn: Lambda     # body is a statement
    coll: object


@dataclass(frozen=True, slots=True)
class Update:
    """map[keys] += value."""
    map: str
    keys: tuple
    value: object


@dataclass(frozen=True, slots=True)
class Replace:
    """map := coll (elements (keys.., value), summed per key)."""
    map: str
    coll: object


@dataclass(frozen=True, slots=True)
class Clear:
    map: str


@dataclass(frozen=True, slots=True)
class Block:
    stmts: tuple


STATEMENTS = (Iterate, Update, Replace, Clear, Block)


# --------------------------------------------------------------------- program

@dataclass(frozen=True, slots=True)
class K3Map:
    name: str
    key_types: tuple
    value_type: Type
    kind: str = "view"   # 'view' | 'temp' | 'delta'
    role: str = "aux"    # 'query' | 'aux' (views only)


@dataclass(frozen=True, slots=True)
class K3Trigger:
    name: str
    event: object        # toaster.calculus.maps.Event
    params: tuple        # tuple[Var, ...]
    body: tuple          # tuple of statements


@dataclass(frozen=True, slots=True)
class K3Program:
    relations: tuple
    maps: tuple          # tuple[K3Map, ...]
    triggers: tuple      # tuple[K3Trigger, ...]
    queries: tuple
    mode: str = "tuple"

    def map(self, name: str) -> K3Map:
        for m in self.maps:
            if m.name == name:
                return m
        raise KeyError(name)


# ------------------------------------------------------------------- helpers

def type_of(e):
    """The type of a K3 expression (None for statements)."""
    match e:
        case Var(_, t) | Const(_, t) | BinOp(_, _, _, t) | Cast(t, _) | Call(_, _, t) | Lookup(_, _, t):
            return t
        case Not():
            return BOOL
        case Tuple(es):
            return TupleType(tuple(type_of(x) for x in es))
        case Project(a, i):
            return type_of(a).elems[i]
        case Lambda(_, body):
            return type_of(body)
        case Apply(fn, _):
            return type_of(fn.body)
        case IfThenElse(_, a, _):
            return type_of(a)
        case Empty(t):
            return t
        case Singleton(x):
            return CollType(type_of(x))
        case Union(parts):
            return type_of(parts[0])
        case Slice(_, _, kts, vt):
            return CollType(TupleType(tuple(kts) + (vt,)))
        case Map(fn, _):
            return CollType(type_of(fn.body))
        case Filter(_, c):
            return type_of(c)
        case Flatten(c):
            return type_of(c).elem
        case Aggregate(fn, _, _):
            return type_of(fn.body)
        case GroupByAggregate(g, fn, _, _):
            return CollType(TupleType(type_of(g.body).elems + (type_of(fn.body),)))
        case Iterate() | Update() | Replace() | Clear() | Block():
            return None
    raise TypeError(f"not a K3 expression: {e!r}")


def numeric(a, b) -> Type:
    return FLOAT if FLOAT in (type_of(a), type_of(b)) else INT


def cast_to(e, t: Type):
    """e converted to numeric type t (no-op when it already has it)."""
    if type_of(e) == t:
        return e
    if isinstance(e, Const) and t in (INT, FLOAT) and type_of(e) in (INT, FLOAT, BOOL):
        return Const(float(e.value) if t == FLOAT else int(e.value), t)
    return Cast(t, e)


def arith(op: str, a, b):
    """Typed arithmetic: INT op INT is INT (except '/'), anything with a FLOAT is FLOAT."""
    t = FLOAT if op == "/" else numeric(a, b)
    return BinOp(op, cast_to(a, t), cast_to(b, t), t)


def compare(op: str, a, b):
    ta, tb = type_of(a), type_of(b)
    if ta != tb and ta in (INT, FLOAT) and tb in (INT, FLOAT):
        a, b = cast_to(a, FLOAT), cast_to(b, FLOAT)
    return BinOp(op, a, b, BOOL)


def children(e) -> tuple:
    """Direct sub-expressions (lambdas included)."""
    match e:
        case Var() | Const() | Empty() | Clear():
            return ()
        case BinOp(_, a, b, _):
            return (a, b)
        case Not(a) | Cast(_, a) | Project(a, _) | Singleton(a) | Flatten(a):
            return (a,)
        case Call(_, args, _) | Lookup(_, args, _) | Tuple(args) | Union(args) | Block(args):
            return tuple(args)
        case Lambda(_, body):
            return (body,)
        case Apply(fn, args):
            return (fn,) + tuple(args)
        case IfThenElse(c, a, b):
            return (c, a, b)
        case Slice(_, pat, _, _):
            return tuple(p for p in pat if p is not None)
        case Map(fn, c) | Filter(fn, c) | Iterate(fn, c):
            return (fn, c)
        case Aggregate(fn, init, c):
            return (fn, init, c)
        case GroupByAggregate(g, fn, init, c):
            return (g, fn, init, c)
        case Update(_, keys, v):
            return tuple(keys) + (v,)
        case Replace(_, c):
            return (c,)
    raise TypeError(f"not a K3 expression: {e!r}")


def maps_read(e) -> set:
    """Names of maps that e reads (Lookup / Slice)."""
    out = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, (Lookup, Slice)):
            out.add(x.map)
        stack.extend(children(x))
    return out


def free_vars(e) -> set:
    """Names of variables occurring free in e."""
    match e:
        case Var(n, _):
            return {n}
        case Lambda(params, body):
            return free_vars(body) - {p.name for p in params}
    out = set()
    for c in children(e):
        out |= free_vars(c)
    return out


def count_uses(e, name: str) -> int:
    """Free occurrences of variable `name` in e."""
    match e:
        case Var(n, _):
            return 1 if n == name else 0
        case Lambda(params, body):
            return 0 if any(p.name == name for p in params) else count_uses(body, name)
    return sum(count_uses(c, name) for c in children(e))
