"""Declarations shared by all stages: relations, their sources, and query result shapes."""
from __future__ import annotations

from dataclasses import dataclass, field

from toaster.types import Type


@dataclass(frozen=True, slots=True)
class Source:
    """FROM FILE '<path>' LINE DELIMITED <adaptor>(<params>)."""
    path: str
    adaptor: str = "csv"          # lower-cased adaptor name
    params: tuple = ()            # tuple[(name, value)], names lower-cased

    def param(self, name: str, default: str | None = None) -> str | None:
        for k, v in self.params:
            if k == name:
                return v
        return default


@dataclass(frozen=True, slots=True)
class Column:
    name: str   # upper-cased
    type: Type


@dataclass(frozen=True, slots=True)
class RelationDecl:
    name: str                 # upper-cased
    columns: tuple            # tuple[Column, ...]
    kind: str                 # 'stream' | 'table'
    source: Source | None = None

    @property
    def types(self) -> tuple:
        return tuple(c.type for c in self.columns)


@dataclass(frozen=True, slots=True)
class ResultColumn:
    name: str     # output column name
    type: Type


@dataclass(frozen=True, slots=True)
class QueryResult:
    """How one SELECT is reported: key columns then value columns.

    Simple case: every value column is a materialized map (value_maps[i]) keyed by all the key
    columns, in order. General case (value_terms set): each value column is a result term over
    maps keyed by the key columns (or by the key columns plus extra positions, reduced on read:
    MIN/MAX/COUNT DISTINCT), the groups are the nonzero keys of group_map, `having` filters rows
    and order_by/limit are applied when the result is read. A row is reported for each key whose
    values are not all zero.
    """
    name: str                  # 'QUERY_1', 'QUERY_2', ...
    key_columns: tuple         # tuple[ResultColumn, ...]
    value_columns: tuple       # tuple[ResultColumn, ...]
    value_maps: tuple          # tuple[str, ...] maps read (parallel to value_columns when
                               # value_terms is None)
    order_by: tuple = field(default=())  # tuple[(result term, descending)] applied on read
    value_terms: tuple | None = None     # per value column a result term over the maps
                                         # (toaster.calculus.results), e.g. SUM/COUNT for AVG
    group_map: str | None = None         # a map whose nonzero keys are exactly the groups
    having: object | None = None         # a result condition (rows where it is 0 are dropped)
    limit: int | None = None
    checks: tuple = ()                   # tuple[(map, message)]: reading the result is an error
                                         # (the message) while a map has a nonzero entry

    @property
    def columns(self) -> tuple:
        return self.key_columns + self.value_columns
