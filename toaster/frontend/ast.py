"""SQL abstract syntax tree (the `sql` stage). Immutable; every node carries its source position.

Names are upper-cased by the parser (the dialect is case-insensitive). After resolution
(toaster.frontend.resolve) column references carry their resolved source alias and type.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from toaster.types import Type


@dataclass(frozen=True, slots=True)
class Pos:
    line: int
    column: int


NOPOS = Pos(0, 0)


# ------------------------------------------------------------------ expressions

@dataclass(frozen=True, slots=True)
class Literal:
    value: object          # int | float | str | bool ; dates as int YYYYMMDD
    type: Type
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class ColumnRef:
    qualifier: str | None  # alias as written (upper-cased), or None
    name: str
    pos: Pos = field(default=NOPOS, compare=False)
    source: str | None = None   # resolved FROM alias
    type: Type | None = None    # resolved type


@dataclass(frozen=True, slots=True)
class BinaryOp:
    op: str                # '+', '-', '*', '/'
    left: object
    right: object
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class Negate:
    arg: object
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class AggCall:
    func: str              # 'SUM' | 'COUNT' | 'AVG' | 'MIN' | 'MAX'
    args: tuple            # () for COUNT(*)
    distinct: bool = False
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class FuncCall:
    name: str
    args: tuple
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A construct the grammar knows but the translator does not support yet."""
    what: str
    pos: Pos = field(default=NOPOS, compare=False)


# ------------------------------------------------------------------- conditions

@dataclass(frozen=True, slots=True)
class Comparison:
    op: str                # '=', '!=', '<', '<=', '>', '>='   ('<>' normalized to '!=')
    left: object
    right: object
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class And:
    args: tuple
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class NotCond:
    arg: object
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class BoolConst:
    value: bool
    pos: Pos = field(default=NOPOS, compare=False)


# --------------------------------------------------------------------- queries

@dataclass(frozen=True, slots=True)
class Target:
    expr: object
    alias: str | None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class RelItem:
    relation: str
    alias: str             # defaults to the relation name
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Select:
    targets: tuple         # tuple[Target | Unsupported]
    from_items: tuple      # tuple[RelItem | Unsupported]
    where: object | None
    group_by: tuple        # tuple[expr]
    distinct: bool = False
    pos: Pos = field(default=NOPOS, compare=False)
    text: str = field(default="", compare=False)   # the statement's source text
    unsupported: tuple = ()  # tuple[Unsupported]: clauses parsed but not supported yet


@dataclass(frozen=True, slots=True)
class CreateRelation:
    decl: object           # toaster.schema.RelationDecl
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Include:
    path: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class SqlProgram:
    relations: tuple       # tuple[RelationDecl]
    selects: tuple         # tuple[Select]
    file: str | None = None
