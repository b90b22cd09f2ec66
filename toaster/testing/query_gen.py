"""Random SQL queries of toaster's dialect over R(A,B), S(B,C), T(C,D), as hypothesis strategies.

    @given(sql=queries(), stream=rst_streams())
    def test_x(sql, stream): run_differential(sql, "calc", stream)

The text is a whole program: the CREATE STREAM declarations, then one SELECT. Queries are typed
and scoped by construction: every column is qualified with an alias that is unique in the whole
query, so correlated subqueries may refer to any enclosing source. Generated constructs: comma
joins, JOIN ... ON, NATURAL JOIN, FROM subqueries (aggregate and not), WHERE with AND/OR/NOT,
all comparison operators, BETWEEN, IN lists, IN / NOT IN / EXISTS / NOT EXISTS subqueries,
comparisons with scalar (aggregate, possibly correlated, NULL when empty unless a COUNT)
subqueries, comparisons with literal arithmetic (`(0.7 + 0.1) * 5`), CASE, LISTMIN/LISTMAX,
arithmetic, DISTINCT, GROUP BY (with unselected columns), HAVING, SUM/COUNT/COUNT(DISTINCT)/
AVG/MIN/MAX and UNION ALL (the NULL variant: also UNION, INTERSECT, EXCEPT).

Values stay exact and defined: conditions compare integer expressions only, or with exact
constant arithmetic (no rounding
differences between engines), '/' appears only in result values and always divides by
LISTMAX(1, ...) >= 1, and AVG is never compared with '=' or '<>'.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from toaster.schema import Column, RelationDecl, physical_columns
from toaster.testing.generator import random_stream
from toaster.testing.strategies import update_streams
from toaster.types import INT

SCHEMA = {"R": ("A", "B"), "S": ("B", "C"), "T": ("C", "D")}
RST_RELATIONS = tuple(RelationDecl(n, tuple(Column(c, INT) for c in cols), "stream") for n, cols in SCHEMA.items())
DECLARATIONS = "".join(f"CREATE STREAM {n}({', '.join(c + ' int' for c in cols)});\n" for n, cols in SCHEMA.items())
# the NULL variant: each relation's second column is nullable
NULLABLE = {"R": "B", "S": "C", "T": "D"}
RST_NULL_RELATIONS = tuple(RelationDecl(n, physical_columns(Column(c, INT, nullable=NULLABLE[n] == c) for c in cols),
                                        "stream") for n, cols in SCHEMA.items())
NULL_DECLARATIONS = "".join(
    f"CREATE STREAM {n}({', '.join(c + ' int' + (' NULL' if NULLABLE[n] == c else '') for c in cols)});\n"
    for n, cols in SCHEMA.items())

COMPARISONS = ("=", "<>", "!=", "<", "<=", ">", ">=")
DECIMALS = ("0.1", "0.2", "0.7", "0.06", "0.01", "1.5", "2.9")   # inexact in binary, exact as DECIMAL
SMALL_DOMAIN = {INT: (0, 1, 2, 3, 4)}


def rst_streams(*, deletes: bool = True, max_batches: int = 6, max_batch: int = 5,
                nulls: bool = False) -> st.SearchStrategy:
    """Insert(+delete) streams over R, S, T from a small int domain (so joins and filters hit).

    Half of the draws are hypothesis-built streams (they shrink well, but hypothesis keeps them
    short), half are seeded random_stream()s of max_batches batches, which fill every relation
    so that joins and nested subqueries see data. nulls: over the NULL variant's relations
    (random_stream draws NULL for a nullable column about as often as each value)."""
    relations = RST_NULL_RELATIONS if nulls else RST_RELATIONS
    seeded = st.integers(0, 2 ** 20).map(
        lambda seed: random_stream(relations, seed=seed, deletes=deletes, n_batches=max_batches,
                                   max_batch=max_batch, domains=SMALL_DOMAIN))
    if nulls:
        return seeded
    drawn = update_streams(RST_RELATIONS, deletes=deletes, max_batches=max_batches, max_batch=max_batch,
                           domains=SMALL_DOMAIN)
    return st.one_of(drawn, seeded)


@dataclass
class _Source:
    alias: str
    columns: tuple        # names readable as alias.col (all int)


@dataclass
class _Gen:
    """One query being drawn: `draw` is hypothesis', `next_id` makes aliases unique."""
    draw: object
    next_id: int = 0
    budget: int = 3       # subqueries left (keeps examples small)
    outer: list = field(default_factory=list)   # enclosing scopes' sources, for correlation
    nulls: bool = False   # the NULL variant: IS NULL, COALESCE, NULLIF and outer joins too

    def alias(self, prefix: str) -> str:
        self.next_id += 1
        return f"{prefix}{self.next_id}"

    def choice(self, options, label=None):
        return self.draw(st.sampled_from(options), label=label)

    def flip(self, p_true_in_8: int = 4) -> bool:
        return self.draw(st.integers(0, 7)) < p_true_in_8

    # ---------------------------------------------------------------- FROM
    def from_clause(self, allow_subquery: bool = True) -> tuple[str, list[_Source], list[str]]:
        """FROM text, its sources, and join conditions to add to WHERE."""
        n = self.draw(st.integers(1, 3 if allow_subquery else 2), label="sources")
        parts, sources, joins = [], [], []
        for i in range(n):
            src_text, src = self.source(allow_subquery and i == n - 1)
            if i > 0 and self.nulls and self.flip(3):
                on = self.join_condition(sources[-1], src)
                kind = self.choice(("LEFT", "LEFT", "RIGHT", "FULL"))   # the left side may be a join
                parts[-1] = f"{parts[-1]} {kind} JOIN {src_text} ON {on}"
            elif i > 0 and self.flip(3):   # JOIN ... ON / NATURAL JOIN instead of a comma
                if self.flip(2) and self._natural_ok(parts[-1], src_text):
                    parts[-1] = f"{parts[-1]} NATURAL JOIN {src_text}"
                else:
                    on = self.join_condition(sources[-1], src)
                    parts[-1] = f"{parts[-1]} JOIN {src_text} ON {on}"
            else:
                parts.append(src_text)
                if i > 0 and self.flip(6):
                    joins.append(self.join_condition(self.choice(sources), src))
            sources.append(src)
        return ", ".join(parts), sources, joins

    @staticmethod
    def _natural_ok(left: str, right: str) -> bool:
        """NATURAL JOIN only between two plain relations that share a column (never ambiguous)."""
        lw, rw = left.split(), right.split()
        return (len(lw) == 2 and len(rw) == 2 and lw[0] in SCHEMA and rw[0] in SCHEMA
                and bool(set(SCHEMA[lw[0]]) & set(SCHEMA[rw[0]])))

    def source(self, allow_subquery: bool) -> tuple[str, _Source]:
        if allow_subquery and self.budget > 0 and self.flip(2):
            self.budget -= 1
            alias = self.alias("q")
            body, cols = self.from_subquery()
            return f"({body}) {alias}", _Source(alias, cols)
        rel = self.choice(sorted(SCHEMA), label="relation")
        alias = self.alias(rel.lower())
        return f"{rel} {alias}", _Source(alias, SCHEMA[rel])

    def from_subquery(self) -> tuple[str, tuple]:
        """A FROM subquery with int columns X1, X2: grouped (a SUM/COUNT/MIN/MAX) or not."""
        sub = _Gen(self.draw, self.next_id, 0, [], self.nulls)       # FROM items cannot see enclosing sources
        text, sources, joins = sub.from_clause(allow_subquery=False)
        conds = joins + ([sub.condition(sources, 1)] if sub.flip(4) else [])
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        key = sub.column(sources)
        if sub.flip(4):
            agg = sub.choice(("SUM", "COUNT", "MIN", "MAX"))
            arg = "*" if agg == "COUNT" else sub.int_expr(sources, 1)
            body = f"SELECT {key} AS X1, {agg}({arg}) AS X2 FROM {text}{where} GROUP BY {key}"
        else:
            body = f"SELECT {key} AS X1, {sub.int_expr(sources, 1)} AS X2 FROM {text}{where}"
        self.next_id = sub.next_id
        return body, ("X1", "X2")

    def join_condition(self, left: _Source, right: _Source) -> str:
        op = "=" if self.flip(6) else self.choice(COMPARISONS)
        return f"{left.alias}.{self.choice(left.columns)} {op} {right.alias}.{self.choice(right.columns)}"

    # ------------------------------------------------------------- expressions (int)
    def column(self, sources) -> str:
        src = self.choice(sources)
        return f"{src.alias}.{self.choice(src.columns)}"

    def visible(self, sources) -> list:
        return list(sources) + [s for scope in self.outer for s in scope]

    def int_expr(self, sources, depth: int) -> str:
        kinds = ["col", "col", "lit"] + (["arith", "arith", "case", "list", "neg"] if depth > 0 else [])
        if self.nulls and depth > 0:
            kinds += ["coalesce", "nullif"]
        if depth > 0 and self.budget > 0:
            kinds.append("scalar")
        match self.choice(kinds):
            case "col":
                return self.column(self.visible(sources) if self.outer and self.flip(2) else sources)
            case "lit":
                return str(self.draw(st.integers(0, 4)))
            case "arith":
                op = self.choice(("+", "-", "*"))
                return f"({self.int_expr(sources, depth - 1)} {op} {self.int_expr(sources, depth - 1)})"
            case "neg":
                return f"-({self.int_expr(sources, depth - 1)})"   # never '--' (a comment)
            case "case":
                return (f"CASE WHEN {self.condition(sources, 0)} THEN {self.int_expr(sources, depth - 1)} "
                        f"ELSE {self.int_expr(sources, depth - 1)} END")
            case "list":
                fn = self.choice(("LISTMIN", "LISTMAX"))
                return f"{fn}({self.int_expr(sources, depth - 1)}, {self.int_expr(sources, depth - 1)})"
            case "scalar":   # a COUNT: never NULL, so it may stand anywhere
                return self.scalar_subquery(sources, count_only=True)
            case "coalesce":
                return f"COALESCE({self.int_expr(sources, depth - 1)}, {self.int_expr(sources, depth - 1)})"
            case "nullif":
                return f"NULLIF({self.int_expr(sources, depth - 1)}, {self.int_expr(sources, depth - 1)})"

    def scalar_subquery(self, sources, count_only: bool = False) -> str:
        """(SELECT SUM|COUNT|MIN|MAX(...) FROM ... [WHERE ... correlated]): an int; over no rows
        COUNT is 0 and the others are NULL (only compared: toaster's results hold no NULL yet)."""
        self.budget -= 1
        sub = _Gen(self.draw, self.next_id, self.budget, self.outer + [list(sources)], self.nulls)
        text, inner, joins = sub.from_clause(allow_subquery=False)
        conds = joins + ([sub.condition(inner, 1)] if sub.flip(6) else [])
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        agg = "COUNT" if count_only else sub.choice(("SUM", "COUNT", "MIN", "MAX"))
        # the argument reads inner columns only: SQL makes SUM(outer.col) an aggregate of the outer query
        sub.outer, correlated = [], sub.outer
        arg = "*" if agg == "COUNT" else sub.int_expr(inner, 1)
        sub.outer = correlated
        self.next_id, self.budget = sub.next_id, sub.budget
        return f"(SELECT {agg}({arg}) FROM {text}{where})"

    # ------------------------------------------------------------------ conditions
    def condition(self, sources, depth: int) -> str:
        e = min(depth, 1)     # expressions in conditions shrink with the condition's depth
        kinds = ["cmp", "cmp", "cmp", "between", "in_list", "cmp_literal"] + (["is_null"] if self.nulls else [])
        if depth > 0:
            kinds += ["and", "or", "not"]
            if self.budget > 0:
                kinds += ["exists", "in_query", "cmp_scalar"]
        match self.choice(kinds):
            case "cmp":
                return f"{self.int_expr(sources, e)} {self.choice(COMPARISONS)} {self.int_expr(sources, e)}"
            case "cmp_literal":   # exact constant arithmetic, often landing on an integer
                return f"{self.int_expr(sources, e)} {self.choice(COMPARISONS)} {self.decimal_constant()}"
            case "between":
                neg = "NOT " if self.flip(2) else ""
                return (f"{self.int_expr(sources, e)} {neg}BETWEEN {self.int_expr(sources, 0)} "
                        f"AND {self.int_expr(sources, 0)}")
            case "in_list":
                neg = "NOT " if self.flip(2) else ""
                values = self.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
                return f"{self.int_expr(sources, e)} {neg}IN ({', '.join(map(str, values))})"
            case "is_null":
                return f"{self.int_expr(sources, e)} IS {'NOT ' if self.flip(3) else ''}NULL"
            case "and" | "or" as op:
                return f"({self.condition(sources, depth - 1)} {op.upper()} {self.condition(sources, depth - 1)})"
            case "not":
                return f"NOT ({self.condition(sources, depth - 1)})"
            case "exists":
                neg = "NOT " if self.flip(3) else ""
                return f"{neg}EXISTS ({self.row_subquery(sources, star=True)})"
            case "in_query":
                neg = "NOT " if self.flip(3) else ""
                return f"{self.int_expr(sources, 0)} {neg}IN ({self.row_subquery(sources)})"
            case "cmp_scalar":
                return f"{self.int_expr(sources, e)} {self.choice(COMPARISONS)} {self.scalar_subquery(sources)}"

    def decimal_constant(self) -> str:
        """Literal arithmetic such as `(0.7 + 0.1) * 5` (4 exactly; 3.9999999999999996 in doubles)."""
        a, b = self.choice(DECIMALS), self.choice(DECIMALS)
        op = self.choice(("+", "-"))
        return f"({a} {op} {b}) * {self.choice(('1', '5', '10', '100'))}"

    def row_subquery(self, sources, star: bool = False) -> str:
        """A (possibly correlated) one-column non-aggregate subquery for IN / EXISTS."""
        self.budget -= 1
        sub = _Gen(self.draw, self.next_id, self.budget, self.outer + [list(sources)], self.nulls)
        text, inner, joins = sub.from_clause(allow_subquery=False)
        conds = joins + ([sub.condition(inner, 1)] if sub.flip(6) else [])
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        target = "*" if star and sub.flip(4) else sub.int_expr(inner, 1)
        self.next_id, self.budget = sub.next_id, sub.budget
        return f"SELECT {target} FROM {text}{where}"

    # ---------------------------------------------------------------------- SELECT
    def select(self) -> str:
        text, sources, joins = self.from_clause()
        conds = joins + ([self.condition(sources, 2)] if self.flip(5) else [])
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        if self.flip(5):
            return self.aggregate_select(text, sources, where)
        return self.plain_select(text, sources, where)

    def plain_select(self, text, sources, where) -> str:
        n = self.draw(st.integers(1, 3), label="targets")
        targets = [f"{self.int_expr(sources, 1)} AS V{i}" for i in range(n)]
        distinct = "DISTINCT " if self.flip(2) else ""
        query = f"SELECT {distinct}{', '.join(targets)} FROM {text}{where}"
        if self.budget > 0 and self.flip(1):      # a set operation with a same-arity branch
            self.budget -= 1
            other = _Gen(self.draw, self.next_id, 0, [], self.nulls)
            t2, s2, j2 = other.from_clause(allow_subquery=False)
            w2 = f" WHERE {' AND '.join(j2)}" if j2 else ""
            targets2 = [f"{other.int_expr(s2, 1)} AS V{i}" for i in range(n)]
            self.next_id = other.next_id
            # the NULL variant also draws the set operations where NULL matches NULL
            op = self.choice(("UNION ALL", "UNION", "INTERSECT", "EXCEPT")) if self.nulls else "UNION ALL"
            query += f" {op} SELECT {', '.join(targets2)} FROM {t2}{w2}"
        return query

    def aggregate_select(self, text, sources, where) -> str:
        cols = sorted({self.column(sources) for _ in range(self.draw(st.integers(0, 2), label="group by"))})
        shown = [c for c in cols if self.flip(6)]
        targets = [f"{c} AS G{i}" for i, c in enumerate(shown)]
        for i in range(self.draw(st.integers(1, 3), label="aggregates")):
            targets.append(f"{self.aggregate(sources)} AS AGG{i}")
        group = f" GROUP BY {', '.join(cols)}" if cols else ""
        having = ""
        if cols and self.flip(2):
            having = f" HAVING {self.aggregate(sources, comparable=True)} {self.choice(('<', '>', '>=', '<='))} " \
                     f"{self.draw(st.integers(0, 6))}"
        return f"SELECT {', '.join(targets)} FROM {text}{where}{group}{having}"

    def aggregate(self, sources, comparable: bool = False) -> str:
        kinds = ["SUM", "SUM", "COUNT", "COUNT_DISTINCT", "AVG", "MIN", "MAX"]
        if not comparable:
            kinds += ["RATIO", "ARITH"]
        match self.choice(kinds):
            case "COUNT":
                return "COUNT(*)"
            case "COUNT_DISTINCT":
                return f"COUNT(DISTINCT {self.column(sources)})"
            case "RATIO":   # float division, guarded
                return f"SUM({self.int_expr(sources, 1)}) / LISTMAX(1, COUNT(*))"
            case "ARITH":
                return f"SUM({self.int_expr(sources, 1)}) * 2 + COUNT(*)"
            case agg:
                return f"{agg}({self.int_expr(sources, 1)})"


@st.composite
def select_queries(draw, nulls: bool = False) -> str:
    """One SELECT over R, S, T (no declarations)."""
    return _Gen(draw, nulls=nulls).select()


def queries(nulls: bool = False) -> st.SearchStrategy:
    """A whole program: the R/S/T declarations and one random SELECT. nulls: R.B, S.C, T.D are
    nullable and the SELECT may use IS [NOT] NULL, COALESCE, NULLIF and LEFT/RIGHT/FULL JOIN; its
    FROM subqueries and set operations then carry NULL columns."""
    decls = NULL_DECLARATIONS if nulls else DECLARATIONS
    return select_queries(nulls).map(lambda q: decls + "\n" + q + ";\n")
