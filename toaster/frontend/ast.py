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
    value: object          # int | Decimal (a number written with a point or exponent: exact) |
    #                        float | str | bool ; dates as int YYYYMMDD
    type: Type
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class NullLiteral:
    """SQL's NULL. Typed by its context when resolved (the other operand of an operator or
    comparison, the other values of COALESCE / NULLIF / CASE / a set-operation column); alone,
    int (DuckDB materializes a bare NULL column as INTEGER)."""
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class ColumnRef:
    qualifier: str | None  # alias as written (upper-cased), or None
    name: str
    pos: Pos = field(default=NOPOS, compare=False)
    source: str | None = None   # resolved FROM alias
    type: Type | None = None    # resolved type
    nullable: bool = False      # resolved: the column is declared NULL (toaster.schema.Column)


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
class Case:
    """Searched CASE (a simple CASE x WHEN v is normalized to x = v conditions).
    else_ is None when absent (its value is then 0, DIALECT.md §3)."""
    whens: tuple           # tuple[(cond, expr)]
    else_: object | None
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class ScalarSubquery:
    """A subquery used as a value (one column; an aggregate per the dialect; over no rows: 0)."""
    query: object          # Select | SetOp
    pos: Pos = field(default=NOPOS, compare=False)
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class Star:
    """`*` or `R.*` in a target list (parser output only: resolution expands it into columns)."""
    qualifier: str | None
    pos: Pos = field(default=NOPOS, compare=False)


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
class InQuery:
    """expr [NOT] IN (subquery): membership; the outer row counts once however many match."""
    expr: object
    query: object
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Exists:
    query: object
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Quantified:
    """expr op ALL|SOME (subquery); ANY is SOME."""
    op: str
    expr: object
    quantifier: str        # 'ALL' | 'SOME'
    query: object
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Like:
    expr: object
    pattern: str           # % any run, _ one character, whole string, case-sensitive
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class IsNull:
    """expr IS [NOT] NULL: never unknown."""
    expr: object
    negated: bool = False
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
class SubqueryItem:
    query: object          # Select | SetOp
    alias: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class JoinedItems:
    """The padded side of an outer join that is itself a join (a FROM item after resolution):
    the inner join of `items` (RelItem | SubqueryItem | OuterJoinItem) under `on`, its ON and
    NATURAL conditions (None: a cross product). Padding it pads all of its items at once."""
    items: tuple
    on: object | None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class OuterJoinItem:
    """A resolved LEFT / RIGHT / FULL [OUTER] JOIN (a FROM item after resolution): `right` is
    null-padded -- its rows matching `on`, or, where `no_match_right` (a resolved NOT EXISTS over
    a copy of it) holds, one row of NULLs; FULL pads `left` the same way (RIGHT JOIN is a LEFT JOIN
    with the sides swapped). Every column of a padded item is nullable above the join."""
    kind: str              # 'LEFT' | 'FULL'
    left: object | None    # FULL: the left item (RelItem | SubqueryItem | JoinedItems); LEFT: None
    right: object          # RelItem | SubqueryItem | JoinedItems
    on: object
    no_match_right: object
    no_match_left: object | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Join:
    """left [NATURAL | CROSS | INNER] JOIN right [ON cond] (parser output only: resolution
    flattens joins into from_items and AND-s their conditions into WHERE)."""
    kind: str              # 'INNER' | 'NATURAL' | 'CROSS' | 'LEFT' | 'RIGHT' | 'FULL'
    left: object           # RelItem | SubqueryItem | Join
    right: object          # RelItem | SubqueryItem | Join (a parenthesized join)
    on: object | None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class OrderItem:
    expr: object
    descending: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class SetOp:
    """left UNION | UNION ALL | INTERSECT | EXCEPT right (standard SQL semantics; UNION is a set
    union, UNION ALL a bag union), ordered / limited as a whole by order_by / limit (resolved:
    items naming its output columns, as ColumnRef(None, name, source=None, type))."""
    op: str                # 'UNION' | 'UNION ALL' | 'INTERSECT' | 'EXCEPT'
    left: object
    right: object
    pos: Pos = field(default=NOPOS, compare=False)
    text: str = field(default="", compare=False)
    order_by: tuple = ()   # tuple[OrderItem]
    limit: int | None = None


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
    having: object | None = None
    order_by: tuple = ()   # tuple[OrderItem]
    limit: int | None = None
    targets_end: int = field(default=0, compare=False)  # source offset where the target list
    # ends: generated result names are numbered in the order target lists finish (DIALECT §5)


@dataclass(frozen=True, slots=True)
class CreateRelation:
    decl: object           # toaster.schema.RelationDecl
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class CreateFunction:
    """CREATE FUNCTION name(arg type, ...) RETURNS type AS EXTERNAL 'external_name'."""
    name: str              # lower-cased
    arg_types: tuple       # tuple[Type]
    return_type: Type
    external: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class Include:
    path: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True, slots=True)
class SqlProgram:
    relations: tuple       # tuple[RelationDecl]
    selects: tuple         # tuple[Select | SetOp]
    file: str | None = None
    functions: tuple = ()  # tuple[CreateFunction]
    declared_before: tuple = ()  # per statement: (relations, functions) declared before it
    # (counts into relations / functions; empty: everything is visible)
