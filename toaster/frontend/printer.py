"""Print SQL ASTs: toaster's dialect (the `sql` stage dump) and DuckDB's (the test oracle)."""
from __future__ import annotations

from toaster.frontend import ast as A
from toaster.frontend.resolve import ResolvedQuery
from toaster.types import DATE, STRING, int_to_date

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def print_expr(e, dialect: str = "toaster", prec: int = 0) -> str:
    match e:
        case A.Literal(v, t):
            if t == DATE:
                return f"DATE('{int_to_date(v)}')" if dialect == "toaster" else f"DATE '{int_to_date(v)}'"
            if t == STRING:
                return "'" + str(v) + "'"
            if isinstance(v, float):
                return repr(v)
            return str(v)
        case A.ColumnRef(q, n, _, src):
            qual = src or q
            return f"{qual}.{n}" if qual else n
        case A.BinaryOp(op, l, r):
            p = _PREC[op]
            left = print_expr(l, dialect, p)
            right = print_expr(r, dialect, p + 1)
            if dialect == "duckdb" and op == "/":
                # DuckDB's '/' on integers is already float division; cast keeps it explicit.
                left = f"CAST({left} AS DOUBLE)"
            s = f"{left} {op} {right}"
            return f"({s})" if p < prec else s
        case A.Negate(a):
            return f"-{print_expr(a, dialect, 3)}"
        case A.AggCall(func, args):
            if not args:
                return f"{func}(*)"
            inner = ", ".join(print_expr(a, dialect) for a in args)
            if dialect == "duckdb" and func == "SUM":
                # SQL's SUM over no rows is NULL; the dialect's is 0.
                return f"COALESCE(SUM({inner}), 0)"
            return f"{func}({inner})"
    raise TypeError(f"cannot print {e!r}")


def print_cond(c, dialect: str = "toaster") -> str:
    match c:
        case A.Comparison(op, l, r):
            op = "<>" if (op == "!=" and dialect == "duckdb") else op
            return f"{print_expr(l, dialect)} {op} {print_expr(r, dialect)}"
        case A.And(args):
            return " AND ".join(print_cond(a, dialect) for a in args)
        case A.BoolConst(v):
            return "TRUE" if v else "FALSE"
    raise TypeError(f"cannot print {c!r}")


def _from(sel: A.Select) -> str:
    return ", ".join(it.relation if it.alias == it.relation else f"{it.relation} {it.alias}"
                     for it in sel.from_items)


def print_select(sel: A.Select, dialect: str = "toaster") -> str:
    targets = []
    for t in sel.targets:
        s = print_expr(t.expr, dialect)
        targets.append(f"{s} AS {t.alias}" if t.alias else s)
    out = f"SELECT {', '.join(targets)}\nFROM {_from(sel)}"
    if sel.where is not None:
        out += f"\nWHERE {print_cond(sel.where, dialect)}"
    if sel.group_by:
        out += f"\nGROUP BY {', '.join(print_expr(g, dialect) for g in sel.group_by)}"
    return out


def print_sql_program(relations, queries) -> str:
    """The `sql` stage dump: declarations and resolved queries with their result shapes."""
    from toaster.types import Type
    lines = []
    for r in relations:
        cols = ", ".join(f"{c.name} {c.type}" for c in r.columns)
        src = ""
        if r.source is not None:
            params = ", ".join(f"{k} := '{v}'" for k, v in r.source.params)
            src = f" FROM FILE '{r.source.path}' LINE DELIMITED {r.source.adaptor.upper()}({params})"
        lines.append(f"CREATE {r.kind.upper()} {r.name}({cols}){src};")
    for q in queries:
        keys = ", ".join(f"{n}:{c.type}" for n, c in q.key_columns)
        vals = ", ".join(n for n, _ in q.value_columns)
        lines.append(f"-- {q.name}: keys [{keys}] values [{vals}]")
        lines.append(print_select(q.select) + ";")
    return "\n".join(lines) + "\n"


def oracle_sql(q: ResolvedQuery) -> str:
    """A DuckDB query returning exactly toaster's result columns: keys, then values."""
    sel = q.select
    cols = [print_expr(c, "duckdb") for _, c in q.key_columns]
    for _, agg in q.value_columns:
        cols.append("COUNT(*)" if agg is None else print_expr(agg, "duckdb"))
    out = f"SELECT {', '.join(cols)} FROM {_from(sel)}"
    if sel.where is not None:
        out += f" WHERE {print_cond(sel.where, 'duckdb')}"
    if q.key_columns:
        out += " GROUP BY " + ", ".join(print_expr(c, "duckdb") for _, c in q.key_columns)
    return out
