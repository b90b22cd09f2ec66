"""Imperative IR: typed locals, loops over map entries, conditionals, map updates.

This is the common input of the LLVM backend (local mode) and of the PySpark backend
(per-partition code of distributed statement blocks). All nodes are immutable.

Runtime value representation is that of toaster.types (dates are int YYYYMMDD; strings are
Python str in the interpreter and Spark, dictionary ids in native code).

Maps (MapSpec) are hash maps from key tuples to a numeric value (INT or FLOAT). A missing key
reads as 0. Kinds:
  'view'  a materialized M3 map, lives across triggers
  'temp'  a scratch map local to one trigger (cleared at the start of the trigger body
          by an explicit MapClear)
  'delta' the pre-aggregated batch of a batch trigger: DELTA_<REL>, keys = the relation's
          columns, value = net multiplicity; the runtime fills it before the trigger body
          and clears it after.
`indexes` lists the key-position sets used by ForEach slices (bound positions), so the
backend can build secondary indexes for them.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.types import Type


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True, slots=True)
class LocalRef:
    name: str
    type: Type


@dataclass(frozen=True, slots=True)
class Lit:
    value: object
    type: Type


@dataclass(frozen=True, slots=True)
class BinOp:
    """Arithmetic '+', '-', '*', '/' ('/' always yields FLOAT);
    comparisons '=', '!=', '<', '<=', '>', '>=' (type BOOL); logic 'and', 'or' (BOOL)."""
    op: str
    left: object
    right: object
    type: Type


@dataclass(frozen=True, slots=True)
class Not:
    arg: object
    type: Type = Type.BOOL


@dataclass(frozen=True, slots=True)
class Cast:
    """Numeric conversion (INT <-> FLOAT, BOOL -> INT)."""
    type: Type
    arg: object


@dataclass(frozen=True, slots=True)
class Call:
    """A built-in scalar function (later issues); backends reject names they lack."""
    name: str
    args: tuple
    type: Type


@dataclass(frozen=True, slots=True)
class MapGet:
    """The value stored at keys in map (0 when absent)."""
    map: str
    keys: tuple
    type: Type


# ----------------------------------------------------------------- statements

@dataclass(frozen=True, slots=True)
class Declare:
    """Introduce a local variable (scoped to the enclosing block) with an initial value."""
    var: LocalRef
    init: object


@dataclass(frozen=True, slots=True)
class Assign:
    var: LocalRef
    value: object


@dataclass(frozen=True, slots=True)
class If:
    cond: object
    then: tuple
    orelse: tuple = ()


@dataclass(frozen=True, slots=True)
class ForEach:
    """Loop over the entries of `map` whose key matches `pattern`.

    pattern[i] is an expression for a bound key position (the loop visits only entries with
    that key component: a slice, served by a secondary index on the bound positions) or
    None for a free position, which the loop binds to key_vars[i] (key_vars[i] is None at
    bound positions). value_var receives the entry's value. Entries whose value is 0 are
    skipped. The body must not modify `map` itself.
    """
    map: str
    pattern: tuple
    key_vars: tuple
    value_var: LocalRef
    body: tuple


@dataclass(frozen=True, slots=True)
class MapAdd:
    """map[keys] += value."""
    map: str
    keys: tuple
    value: object


@dataclass(frozen=True, slots=True)
class MapSet:
    """map[keys] = value (group-by folds other than sums: nested MIN/MAX)."""
    map: str
    keys: tuple
    value: object


@dataclass(frozen=True, slots=True)
class MapClear:
    map: str


# -------------------------------------------------------------------- program

@dataclass(frozen=True, slots=True)
class MapSpec:
    name: str
    key_types: tuple     # tuple[Type, ...]
    value_type: Type     # INT or FLOAT
    kind: str = "view"   # 'view' | 'temp' | 'delta'
    indexes: tuple = ()  # tuple[tuple[int, ...], ...] bound-position sets used by slices


@dataclass(frozen=True, slots=True)
class ImpTrigger:
    """Code for one M3 trigger. `event` is the toaster.calculus.maps.Event it implements.
    Single-tuple triggers receive the tuple's fields as params (LocalRefs, in column order);
    batch triggers have no params and read the DELTA_<REL> map."""
    name: str
    event: object
    params: tuple
    body: tuple


@dataclass(frozen=True, slots=True)
class ImpProgram:
    relations: tuple     # tuple[RelationDecl, ...]
    maps: tuple          # tuple[MapSpec, ...]
    triggers: tuple      # tuple[ImpTrigger, ...]
    queries: tuple       # tuple[QueryResult, ...]
    mode: str = "tuple"  # 'tuple' | 'batch'

    def map(self, name: str) -> MapSpec:
        for m in self.maps:
            if m.name == name:
                return m
        raise KeyError(name)


def delta_map_name(relation: str) -> str:
    return f"DELTA_{relation}"
