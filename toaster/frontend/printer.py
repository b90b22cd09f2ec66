"""Print SQL ASTs: toaster's dialect (the `sql` stage dump) and DuckDB's (the test oracle).

oracle_sql(q) gives a DuckDB query returning exactly toaster's result for a statement: its key
columns then its value columns, with toaster's semantics spelled out in standard SQL:
  * SUM / AVG / numeric MIN / MAX over no rows are 0 (COALESCE), except in the value of a scalar
    subquery, which is SQL's NULL over no rows unless it is a COUNT (toaster.frontend.nulls);
    COUNT(e) is COUNT(*) unless e can be NULL; AVG and '/' are float;
  * a non-aggregate statement or a set operation reports each distinct row once with its
    multiplicity (an outer GROUP BY over the query with COUNT(*)); DISTINCT gives multiplicity 1;
  * functions are translated by the registry (toaster/functions.py: listmax -> greatest,
    0-based substring -> 1-based, vec_length -> its formula, ...);
  * literals are typed explicitly (ints BIGINT, dates DATE 'YYYY-MM-DD'); numbers written with
    a point stay DECIMAL literals, so DuckDB folds `0.06 + 0.01` exactly, as toaster does;
  * ORDER BY (by result column position) and LIMIT are kept.
Names are double-quoted; FROM aliases are unique program-wide, so correlation never shadows.
"""
from __future__ import annotations

from decimal import Decimal

from toaster.errors import UnsupportedError
from toaster.frontend.constants import decimal_text
from toaster.frontend.nulls import is_nullable, nullable_subqueries
from toaster.frontend import ast as A
from toaster.frontend.resolve import ResolvedQuery, same_expr
from toaster.functions import FUNCTIONS, duckdb_sql
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, int_to_date

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
_DUCK_TYPES = {INT: "BIGINT", FLOAT: "DOUBLE", STRING: "VARCHAR", DATE: "DATE", BOOL: "BOOLEAN"}


class _Printer:
    def __init__(self, dialect: str, externals: dict | None = None):
        assert dialect in ("toaster", "duckdb")
        self.duck = dialect == "duckdb"
        self.sql_nulls = False   # printing the targets of a scalar subquery that can be NULL
        self.one_row_joins = 0   # `(SELECT 1) AS __ONn` tables printed (their names are distinct)
        self.externals = externals or {}    # declared function name -> its EXTERNAL name

    def name(self, n: str) -> str:
        return '"' + n.replace('"', '""') + '"' if self.duck else n

    # ----------------------------------------------------------- expressions
    def expr(self, e, prec: int = 0) -> str:
        duck = self.duck
        match e:
            case A.Literal(v, t):
                if t == DATE:
                    return f"DATE '{int_to_date(v)}'" if duck else f"DATE('{int_to_date(v)}')"
                if t == STRING:
                    return "'" + str(v).replace("'", "''") + "'"
                if isinstance(v, bool):
                    return "TRUE" if v else "FALSE"
                if isinstance(v, Decimal):   # DuckDB: a DECIMAL literal, exact like toaster's
                    return decimal_text(v) if duck else str(v)
                if isinstance(v, float):
                    return f"CAST({v!r} AS DOUBLE)" if duck else repr(v)
                return f"CAST({v} AS BIGINT)" if duck else str(v)
            case A.NullLiteral(_, t):
                return f"CAST(NULL AS {_DUCK_TYPES[t]})" if duck and t is not None else "NULL"
            case A.ColumnRef(q, n, _, src):
                qual = src or q
                return f"{self.name(qual)}.{self.name(n)}" if qual else self.name(n)
            case A.BinaryOp(op, l, r):
                p = _PREC[op]
                left, right = self.expr(l, p), self.expr(r, p + 1)
                if duck and op == "/":
                    left, right = f"CAST({left} AS DOUBLE)", f"CAST({right} AS DOUBLE)"
                s = f"{left} {op} {right}"
                return f"({s})" if p < prec else s
            case A.Negate(a):
                return f"(- {self.expr(a, 3)})"
            case A.AggCall(func, args, distinct):
                return self.agg(e)
            case A.FuncCall(name, args):
                return self.func(e)
            case A.Case(whens, else_):
                parts = [f"WHEN {self.cond(c)} THEN {self.expr(v)}" for c, v in whens]
                if else_ is not None:
                    parts.append(f"ELSE {self.expr(else_)}")
                elif duck:
                    parts.append("ELSE 0")
                return f"CASE {' '.join(parts)} END"
            case A.ScalarSubquery(query):
                if duck and is_nullable(query):    # SQL's NULL over no rows, as toaster's guards
                    return f"({self.query(query, sql_nulls=True)})"
                s = f"({self.query(query)})"
                if duck and e.type is not None and e.type.is_numeric:
                    return f"COALESCE({s}, 0)"
                return s
        raise TypeError(f"cannot print {e!r}")

    def agg(self, e: A.AggCall) -> str:
        func, args, distinct = e.func, e.args, e.distinct
        if not args:
            return "COUNT(*)"
        inner = ", ".join(self.expr(a) for a in args)
        if not self.duck:
            return f"{func}({'DISTINCT ' if distinct else ''}{inner})"
        if func == "COUNT":
            if not distinct:   # no NULLs: COUNT(e) is COUNT(*), unless e can be NULL
                return f"COUNT({inner})" if nullable_subqueries(args[0]) else "COUNT(*)"
            return f"COUNT(DISTINCT {inner if len(args) == 1 else '(' + inner + ')'})"
        if func == "AVG":
            inner = f"CAST({inner} AS DOUBLE)"
        s = f"{func}({'DISTINCT ' if distinct else ''}{inner})"
        if self.sql_nulls or any(nullable_subqueries(a) for a in args):
            return s       # over only NULLs (or no rows in a scalar subquery) SQL's NULL, as toaster's
        return f"COALESCE({s}, 0)" if e.type is not None and e.type.is_numeric else s

    def func(self, e: A.FuncCall) -> str:
        """A call; for DuckDB, the registry's translation (toaster/functions.py) of the function
        it names, through its CREATE FUNCTION ... EXTERNAL name if it was declared."""
        a = [self.expr(x) for x in e.args]
        if not self.duck or e.name in ("coalesce", "nullif"):
            return f"{e.name.upper() if self.duck else e.name}({', '.join(a)})"
        name = self.externals.get(e.name, e.name)
        f = FUNCTIONS.get(name)
        if f is None:
            return f"{name}({', '.join(a)})"   # an unregistered external: DuckDB's of that name
        try:
            return duckdb_sql(f, a, [x.type for x in e.args])
        except UnsupportedError as err:
            raise UnsupportedError(err.message, line=e.pos.line or None, column=e.pos.column or None) from None

    # ------------------------------------------------------------ conditions
    def cond(self, c) -> str:
        match c:
            case A.Comparison(op, l, r):
                op = "<>" if (op == "!=" and self.duck) else op
                return f"{self.expr(l)} {op} {self.expr(r)}"
            case A.And(args):
                return " AND ".join(f"({self.cond(a)})" for a in args)
            case A.Or(args):
                return " OR ".join(f"({self.cond(a)})" for a in args)
            case A.NotCond(a):
                return f"NOT ({self.cond(a)})"
            case A.BoolConst(v):
                return "TRUE" if v else "FALSE"
            case A.InQuery(e, q, neg):
                return f"{self.expr(e)} {'NOT ' if neg else ''}IN ({self.query(q)})"
            case A.Exists(q, neg):
                return f"{'NOT ' if neg else ''}EXISTS ({self.query(q)})"
            case A.Quantified(op, e, quant, q):
                op = "<>" if (op == "!=" and self.duck) else op
                return f"{self.expr(e)} {op} {'ANY' if (quant == 'SOME' and self.duck) else quant} ({self.query(q)})"
            case A.IsNull(e, neg):
                return f"{self.expr(e)} IS {'NOT ' if neg else ''}NULL"
            case A.Like(e, pattern, neg):
                return f"{self.expr(e)} {'NOT ' if neg else ''}LIKE '{pattern.replace(chr(39), chr(39) * 2)}'"
        raise TypeError(f"cannot print {c!r}")

    # --------------------------------------------------------------- queries
    def from_item(self, it) -> str:
        match it:
            case A.RelItem(rel, alias):
                return self.name(rel) if alias == rel else f"{self.name(rel)} AS {self.name(alias)}"
            case A.SubqueryItem(q, alias):
                return f"({self.query(q)}) AS {self.name(alias)}"
            case A.JoinedItems(items, None):
                return f"({self.from_clause(items, explicit=True)})"
            case A.JoinedItems(items, on) if not any(isinstance(i, A.OuterJoinItem) for i in items):
                *rest, last = items
                return f"({self.from_clause(rest, explicit=True)} INNER JOIN {self.from_item(last)} ON {self.cond(on)})"
            case A.JoinedItems(items, on):
                # the condition may read the outer-joined items, printed last: a join with one row
                self.one_row_joins += 1
                return f"({self.from_clause(items, explicit=True)} INNER JOIN (SELECT 1) " \
                       f"AS __ON{self.one_row_joins} ON {self.cond(on)})"
        raise TypeError(f"cannot print {it!r}")

    def from_clause(self, items, explicit: bool = False) -> str:
        """Items joined in order, outer joins after the others (their ON conditions read them);
        with an outer join (or inside parentheses: explicit) every item is an explicit join,
        since `,` binds looser than JOIN."""
        plain = [self.from_item(it) for it in items if not isinstance(it, A.OuterJoinItem)]
        outer = [it for it in items if isinstance(it, A.OuterJoinItem)]
        if not outer and not explicit:
            return ", ".join(plain)
        out = " CROSS JOIN ".join(plain)
        for it in outer:
            if it.kind == "LEFT":
                out += f" LEFT JOIN {self.from_item(it.right)} ON {self.cond(it.on)}"
            else:
                full = f"({self.from_item(it.left)} FULL JOIN {self.from_item(it.right)} ON {self.cond(it.on)})"
                out = f"{out} CROSS JOIN {full}" if out else full
        return out

    def query(self, q, with_order: bool = True, sql_nulls: bool = False) -> str:
        if isinstance(q, A.SetOp):
            out = f"({self.query(q.left)}) {q.op} ({self.query(q.right)})"
            return out + self.order_limit(q) if with_order else out
        return self.select(q, with_order, sql_nulls=sql_nulls)

    def select(self, sel: A.Select, with_order: bool = True, targets: list | None = None,
               sql_nulls: bool = False) -> str:
        if targets is None:
            saved, self.sql_nulls = self.sql_nulls, sql_nulls   # only this select's own aggregates
            targets = [f"{self.expr(t.expr)} AS {self.name(t.alias)}" if t.alias else self.expr(t.expr)
                       for t in sel.targets]
            self.sql_nulls = saved
        out = f"SELECT {'DISTINCT ' if sel.distinct else ''}{', '.join(targets)}"
        if sel.from_items:
            out += f" FROM {self.from_clause(sel.from_items)}"
        if sel.where is not None:
            out += f" WHERE {self.cond(sel.where)}"
        if sel.group_by:
            out += f" GROUP BY {', '.join(self.expr(g) for g in sel.group_by)}"
        if sel.having is not None:
            out += f" HAVING {self.cond(sel.having)}"
        return out + self.order_limit(sel) if with_order else out

    def order_limit(self, q) -> str:
        """` ORDER BY ... LIMIT n` of a SELECT or a whole set operation ('' when it has neither)."""
        out = ""
        if q.order_by:
            out += " ORDER BY " + ", ".join(self.expr(o.expr) + (" DESC" if o.descending else "")
                                            for o in q.order_by)
        if q.limit is not None:
            out += f" LIMIT {q.limit}"
        return out


# ------------------------------------------------------------------ public API

def print_expr(e, dialect: str = "toaster") -> str:
    return _Printer(dialect).expr(e)


def print_cond(c, dialect: str = "toaster") -> str:
    return _Printer(dialect).cond(c)


def print_query(q, dialect: str = "toaster") -> str:
    """A resolved (or unresolved) Select / SetOp in standard SQL bag semantics."""
    return _Printer(dialect).query(q)


def print_select(sel, dialect: str = "toaster") -> str:
    return print_query(sel, dialect)


def print_sql_program(relations, queries) -> str:
    """The `sql` stage dump: declarations and resolved queries with their result shapes."""
    lines = []
    for r in relations:
        cols = ", ".join(f"{c.name} {c.type}" + (" NULL" if c.nullable else "") for c in r.logical_columns)
        src = ""
        if r.source is not None:
            params = ", ".join(f"{k} := '{v}'" for k, v in r.source.params)
            src = f" FROM FILE '{r.source.path}' LINE DELIMITED {r.source.adaptor.upper()}({params})"
        lines.append(f"CREATE {r.kind.upper()} {r.name}({cols}){src};")
    for f in (queries[0].functions if queries else ()):
        params = ", ".join(f"x{i} {t}" for i, t in enumerate(f.arg_types, start=1))
        lines.append(f"CREATE FUNCTION {f.name}({params}) RETURNS {f.return_type} AS EXTERNAL '{f.external}';")
    for q in queries:
        keys = ", ".join(f"{n}:{c.type}" for n, c in q.key_columns)
        vals = ", ".join(n for n, _ in q.value_columns)
        lines.append(f"-- {q.name}: keys [{keys}] values [{vals}]")
        lines.append(print_query(q.select) + ";")
    return "\n".join(lines) + "\n"


def oracle_sql(q: ResolvedQuery) -> str:
    """A DuckDB query returning exactly toaster's result columns: keys, then values."""
    p = _Printer("duckdb", {f.name: f.external.lower() for f in q.functions})
    sel = q.select
    result_exprs = [e for _, e in q.key_columns] + [e for _, e in q.value_columns]
    if isinstance(sel, A.Select) and q.is_aggregate:
        cols = [f"{p.expr(e)} AS {p.name(n)}" for n, e in q.key_columns + q.value_columns]
        out = p.select(sel, with_order=False, targets=cols)
        order = [(_position(o.expr, result_exprs), o.descending) for o in sel.order_by]
    else:
        # each distinct row once, with its multiplicity
        names = [p.name(n) for n, _ in q.key_columns]
        inner = p.query(sel, with_order=False)
        count = p.name(q.value_columns[0][0])
        out = (f"SELECT {', '.join(names)}, COUNT(*) AS {count} FROM ({inner}) AS \"__T\" "
               f"GROUP BY {', '.join(names)}")
        if isinstance(sel, A.Select):
            order = [(_position(o.expr, [t.expr for t in sel.targets]), o.descending) for o in sel.order_by]
        else:
            order = [(_position(o.expr, [e for _, e in q.key_columns]), o.descending) for o in sel.order_by]
    if order and sel.limit is not None:
        # ties broken as the engines break them: by the key columns, ascending, NULLs last
        order += [(i, False) for i in range(1, len(q.key_columns) + 1)]
    if order:
        out += " ORDER BY " + ", ".join(f"{i}{' DESC' if d else ''}" for i, d in order)
    if sel.limit is not None:
        out += f" LIMIT {sel.limit}"
    return out


def _position(e, exprs: list) -> int:
    for i, x in enumerate(exprs, start=1):
        if x is not None and same_expr(e, x):
            return i
    raise ValueError(f"ORDER BY expression is not a result column: {print_expr(e)}")
