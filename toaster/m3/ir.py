"""The M3 stage: trigger programs: materialized maps and the triggers that keep them fresh.

A map is declared with its key variables, value type and defining calculus expression
(AggSum(keys, definition) is what it holds). A trigger fires on an event:
  Event('insert', R, args) / Event('delete', R, args): a single tuple, args bound to its fields
  Event('batch', R, ()):   a batch of updates to R, readable in statements as DeltaRel(R, vars)
                           (values are multiplicities: +1 per insert, -1 per delete)
  Event('ready', '', ()):  once, when the engine starts (ON SYSTEM READY): sets the initial
                           values of maps that are not empty on the empty database
Statements run in order. `target[keys] += rhs` evaluates rhs (whose free variables are the
trigger args; keys not bound by args must be output variables of rhs) and adds each result
value into target at the key; `:=` replaces the whole map by the result (keys not produced
are removed). Statements in one trigger are ordered so that every map is read before it is
written (all reads see the state before the event).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from toaster.calculus.maps import Event, MapDecl  # noqa: F401  (the M3 vocabulary, re-exported)

@dataclass(frozen=True, slots=True)
class Statement:
    target: str
    keys: tuple          # tuple[Var, ...]
    op: str              # '+=' | ':='
    rhs: object          # calculus expression over MapRef / DeltaRel / values


@dataclass(frozen=True, slots=True)
class Trigger:
    event: Event
    statements: tuple    # tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class M3Program:
    relations: tuple     # tuple[RelationDecl, ...]
    maps: tuple          # tuple[MapDecl, ...]
    triggers: tuple      # tuple[Trigger, ...]
    queries: tuple       # tuple[QueryResult, ...]
    mode: str = "tuple"  # 'tuple' (insert/delete triggers) | 'batch' (batch triggers)
    # the compiler's decisions, for `--explain` (not part of the program's meaning)
    notes: tuple = field(default=(), compare=False)

    def map(self, name: str) -> MapDecl:
        for m in self.maps:
            if m.name == name:
                return m
        raise KeyError(name)

    def relation(self, name: str):
        for r in self.relations:
            if r.name == name:
                return r
        raise KeyError(name)

    def triggers_for(self, relation: str) -> tuple:
        return tuple(t for t in self.triggers if t.event.relation == relation)
