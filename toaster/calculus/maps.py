"""Named query maps and update events: the calculus-level vocabulary the M3 stage builds on.

A map is declared with its key variables, value type and defining calculus expression
(AggSum(keys, definition) is what it holds). An event is what a delta is taken with respect to:
  Event('insert', R, args) / Event('delete', R, args): a single tuple, args bound to its fields
  Event('batch', R, ()):   a batch of updates to R, readable as DeltaRel(R, vars)
                           (values are multiplicities: +1 per insert, -1 per delete)
  Event('ready', '', ()):  once, when the engine starts (ON SYSTEM READY)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toaster.types import Type


@dataclass(frozen=True, slots=True)
class MapDecl:
    name: str
    keys: tuple          # tuple[Var, ...] (names are the canonical key names, types matter)
    type: Type           # value type: INT or FLOAT
    definition: object   # calculus expression whose AggSum over keys the map holds
    role: str = "aux"    # 'query' (a result column) | 'aux' (auxiliary / higher-order view)


@dataclass(frozen=True, slots=True)
class Event:
    kind: str            # 'insert' | 'delete' | 'batch'
    relation: str
    args: tuple = ()     # tuple[Var, ...] for single-tuple events

    @property
    def sign(self) -> int:
        return -1 if self.kind == "delete" else 1
