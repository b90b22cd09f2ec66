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


NULL_FLAG = "__NULL"     # suffix of the physical null-flag column of a nullable column


@dataclass(frozen=True, slots=True)
class Column:
    """A relation column. A column declared `NULL` (nullable) is stored as two physical columns:
    its value (the type's zero when NULL, so NULL keys are canonical) and right after it an INT
    null flag (1 = NULL) named NAME__NULL, with flag_of = NAME. Engines see only physical
    columns; SQL, CSV files, the Python API's rows and results see the logical ones."""
    name: str   # upper-cased
    type: Type
    nullable: bool = False
    flag_of: str | None = None
    # FLOAT values reach an incrementally maintained sum, which cannot take an infinity back:
    # inputs refuse infinities here (set by pass nonfinite_sums; NaN is refused in every FLOAT)
    finite: bool = field(default=False, compare=False)


def physical_columns(columns) -> tuple:
    """Logical columns with a null-flag column inserted after each nullable one."""
    from toaster.types import INT
    out = []
    for c in columns:
        if c.flag_of is not None:
            continue
        out.append(c)
        if c.nullable:
            out.append(Column(c.name + NULL_FLAG, INT, False, c.name))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class RelationDecl:
    name: str                 # upper-cased
    columns: tuple            # tuple[Column, ...]
    kind: str                 # 'stream' | 'table'
    source: Source | None = None
    # computed once: every apply() asks (a property cost a generator per batch)
    has_nulls: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "has_nulls", any(c.nullable for c in self.columns))

    @property
    def types(self) -> tuple:
        return tuple(c.type for c in self.columns)

    @property
    def logical_columns(self) -> tuple:
        """The columns as declared (without the null-flag columns)."""
        return tuple(c for c in self.columns if c.flag_of is None)


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
    null_keys: tuple = ()                # tuple[(key index, flag key index)]: the key column is
                                         # NULL where its flag column is 1; flag columns are not
                                         # reported (toaster.engine folds them)

    @property
    def columns(self) -> tuple:
        return self.key_columns + self.value_columns

    @property
    def flag_keys(self) -> frozenset:
        """Indexes of the key columns that are null flags of other key columns (not reported)."""
        return frozenset(f for _, f in self.null_keys)
