"""The DuckDB oracle printer (the SQL toaster's differential checks give DuckDB), checked
against independently written standard SQL on a small database, and the issue-12 forms
(generated names in ORDER BY, COUNT(DISTINCT) without argument, LIMIT in set operands)."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from toaster.errors import SemanticError, SqlSyntaxError, UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.printer import oracle_sql, print_query, print_expr
from toaster.types import INT, FLOAT, DATE, STRING

from test_frontend import L, _error, names, nodes, one, resolve


# ------------------------------------------------------------- DuckDB oracle

DATA = {
    "R": ("A BIGINT, B BIGINT", [(1, 2), (2, 3), (3, 3), (3, 3), (4, 5), (0, 7)]),
    "S": ("B BIGINT, C DOUBLE", [(2, 1.5), (3, 2.5), (3, -1.0), (7, 0.5), (9, 4.0)]),
    "T": ("C BIGINT, D DATE, N VARCHAR", [(2, "2019-01-01", "abc"), (3, "2020-06-30", "xbz"),
                                          (5, "2021-12-31", "ab"), (3, "2020-02-29", "b'q")]),
}


@pytest.fixture(scope="module")
def db():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for name, (cols, rows) in DATA.items():
        con.execute(f'CREATE TABLE "{name}" ({cols})')
        con.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
    con.execute('CREATE TABLE "E" (A BIGINT, B BIGINT)')   # always empty
    return con


def _norm(v):
    from toaster.testing.oracle import from_duckdb
    v = from_duckdb(v)
    if v is None:
        return 0       # toaster has no NULLs: a missing value is 0
    if isinstance(v, float):
        return round(v, 9) + 0.0
    return v


def _rows(con, sql):
    return sorted((tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()), key=repr)


# (toaster query, the same question in standard SQL written independently: an aggregate query
# as is, a non-aggregate one as the bag of rows that the test counts itself)
ORACLE_CASES = [
    ("SELECT A, SUM(B) FROM R GROUP BY A", "agg", "SELECT A, SUM(B) FROM R GROUP BY A"),
    ("SELECT SUM(A), COUNT(*), AVG(A) FROM E", "agg", "SELECT 0, 0, 0.0"),
    ("SELECT B, AVG(A), MIN(A), MAX(A), COUNT(A) FROM R GROUP BY B", "agg",
     "SELECT B, AVG(A), MIN(A), MAX(A), COUNT(*) FROM R GROUP BY B"),
    ("SELECT SUM(A) / COUNT(*), SUM(A) / 4 FROM R", "agg", "SELECT 13.0 / 6, 13.0 / 4"),
    ("SELECT COUNT(DISTINCT A, B), COUNT(DISTINCT B) FROM R", "agg",
     "SELECT (SELECT COUNT(*) FROM (SELECT DISTINCT A, B FROM R)), (SELECT COUNT(*) FROM (SELECT DISTINCT B FROM R))"),
    ("SELECT A * SUM(B), A FROM R GROUP BY A HAVING COUNT(*) > 1 OR A = 0", "agg",
     "SELECT A, A * SUM(B) FROM R GROUP BY A HAVING COUNT(*) > 1 OR A = 0"),
    ("SELECT SUM(S.C) FROM R, S WHERE R.B = S.B AND R.A > 10", "agg", "SELECT 0.0"),
    ("SELECT * FROM R NATURAL JOIN S", "bag", "SELECT R.A, R.B, S.B, S.C FROM R, S WHERE R.B = S.B"),
    ("SELECT r1.A, r2.A FROM R r1 JOIN R r2 ON r1.B = r2.B WHERE r1.A <> r2.A", "bag",
     "SELECT x.A, y.A FROM R x, R y WHERE x.B = y.B AND x.A != y.A"),
    ("SELECT DISTINCT B FROM R", "bag", "SELECT DISTINCT B FROM R"),
    ("SELECT A FROM R UNION SELECT B FROM S", "bag", "SELECT A FROM R UNION SELECT B FROM S"),
    ("SELECT B FROM R UNION ALL SELECT B FROM S", "bag", "SELECT B FROM R UNION ALL SELECT B FROM S"),
    ("SELECT B FROM R INTERSECT SELECT B FROM S", "bag", "SELECT B FROM R INTERSECT SELECT B FROM S"),
    ("SELECT B FROM R EXCEPT SELECT B FROM S", "bag", "SELECT B FROM R EXCEPT SELECT B FROM S"),
    ("SELECT A, B FROM R WHERE A < (SELECT SUM(S.C) FROM S WHERE S.B = R.B)", "bag",
     "SELECT A, B FROM R WHERE A < COALESCE((SELECT SUM(S.C) FROM S WHERE S.B = R.B), 0)"),
    ("SELECT A FROM R WHERE B IN (SELECT B FROM S) AND NOT EXISTS (SELECT * FROM T WHERE T.C = R.A)", "bag",
     "SELECT A FROM R WHERE B IN (SELECT B FROM S) AND NOT EXISTS (SELECT * FROM T WHERE T.C = R.A)"),
    ("SELECT A FROM R WHERE A < ALL (SELECT B FROM S) OR A = ANY (SELECT C FROM T)", "bag",
     "SELECT A FROM R WHERE A < ALL (SELECT B FROM S) OR A = ANY (SELECT C FROM T)"),
    ("SELECT A FROM R WHERE B NOT IN (SELECT B FROM S) AND B > SOME (SELECT C FROM T)", "bag",
     "SELECT A FROM R WHERE B NOT IN (SELECT B FROM S) AND B > ANY (SELECT C FROM T)"),
    ("SELECT q.B, SUM(q.t) FROM (SELECT B, SUM(A) AS t FROM R GROUP BY B) q WHERE q.t > 2 GROUP BY q.B", "agg",
     "SELECT B, SUM(t) FROM (SELECT B, SUM(A) AS t FROM R GROUP BY B) WHERE t > 2 GROUP BY B"),
    ("SELECT SUM(CASE A WHEN 3 THEN B WHEN 4 THEN 1 END), SUM(CASE WHEN A > 2 THEN 0.5 ELSE A END) FROM R", "agg",
     "SELECT SUM(CASE WHEN A = 3 THEN B WHEN A = 4 THEN 1 ELSE 0 END), SUM(CASE WHEN A > 2 THEN 0.5 ELSE A END) FROM R"),
    ("SELECT N FROM T WHERE N LIKE 'a%' OR N NOT LIKE '_b_'", "bag",
     "SELECT N FROM T WHERE N LIKE 'a%' OR N NOT LIKE '_b_'"),
    ("SELECT EXTRACT(YEAR FROM D), COUNT(*) FROM T WHERE D BETWEEN DATE('2019-01-01') "
     "AND DATE('2020-01-01') + INTERVAL '6' MONTH GROUP BY EXTRACT(YEAR FROM D)", "agg",
     "SELECT year(D), COUNT(*) FROM T WHERE D >= DATE '2019-01-01' AND D <= DATE '2020-07-01' GROUP BY year(D)"),
    ("SELECT date_part('month', D) AS m, SUM(C) FROM T GROUP BY m", "agg",
     "SELECT month(D), SUM(C) FROM T GROUP BY month(D)"),
    ("SELECT 1 AS x WHERE 2 > 1", "bag", "SELECT 1"),
    ("SELECT COUNT(*) FROM R WHERE EXISTS (SELECT * FROM S WHERE S.B = R.B AND "
     "S.C < (SELECT SUM(T.C) FROM T WHERE T.C >= R.A))", "agg",
     "SELECT COUNT(*) FROM R WHERE EXISTS (SELECT * FROM S WHERE S.B = R.B AND "
     "S.C < COALESCE((SELECT SUM(T.C) FROM T WHERE T.C >= R.A), 0))"),
    ("SELECT SUM(A * (SELECT SUM(C) FROM S WHERE S.B = R.B)) FROM R", "agg",
     "SELECT SUM(A * COALESCE((SELECT SUM(C) FROM S WHERE S.B = R.B), 0)) FROM R"),
    ("SELECT COUNT(*) FROM R, (SELECT * FROM R) q WHERE R.A = q.B", "agg",
     "SELECT COUNT(*) FROM R x, R y WHERE x.A = y.B"),
    ("SELECT R.A, T.N FROM R, T WHERE R.A = T.C AND T.N <> 'x'", "bag",
     "SELECT R.A, T.N FROM R, T WHERE R.A = T.C AND T.N != 'x'"),
    ("SELECT B, SUM(A) FROM R GROUP BY B, A", "agg", "SELECT B, A, SUM(A) FROM R GROUP BY B, A"),
    ("SELECT -A, A - -1 FROM R", "bag", "SELECT -A, A + 1 FROM R"),
    ("SELECT B, COUNT(DISTINCT) FROM R GROUP BY B", "agg",
     "SELECT B, COUNT(*) FROM (SELECT DISTINCT A, B FROM R) GROUP BY B"),
    ("SELECT COUNT(DISTINCT) FROM R, S WHERE R.B = S.B", "agg",
     "SELECT COUNT(*) FROM (SELECT DISTINCT R.A, R.B, S.B, S.C FROM R, S WHERE R.B = S.B)"),
]


@pytest.mark.parametrize("sql, kind, reference", ORACLE_CASES)
def test_oracle_sql_matches_independent_sql(db, sql, kind, reference):
    q = one(sql)
    got = _rows(db, oracle_sql(q))
    ref = _rows(db, reference)
    if kind == "bag":
        assert not q.is_aggregate
        ref = sorted((row + (n,) for row, n in Counter(ref).items()), key=repr)
    else:
        assert q.is_aggregate
    assert got == ref and got, "vacuous case: no rows"
    assert len(got[0]) == len(q.key_columns) + len(q.value_columns)


def test_oracle_sql_order_by_and_limit(db):
    q = one("SELECT A, SUM(B) AS s FROM R GROUP BY A ORDER BY s DESC, A LIMIT 3")
    got = [tuple(map(_norm, r)) for r in db.execute(oracle_sql(q)).fetchall()]
    ref = [tuple(map(_norm, r)) for r in db.execute(
        "SELECT A, SUM(B) AS s FROM R GROUP BY A ORDER BY s DESC, A LIMIT 3").fetchall()]
    assert got == ref
    q = one("SELECT B FROM R ORDER BY B DESC")
    got = [tuple(map(_norm, r)) for r in db.execute(oracle_sql(q)).fetchall()]
    ref = Counter(r[0] for r in db.execute("SELECT B FROM R").fetchall())
    assert got == [(b, ref[b]) for b in sorted(ref, reverse=True)]


def test_oracle_sql_several_statements(db):
    q1, q2 = resolve("SELECT COUNT(*) FROM R; SELECT B, COUNT(*) FROM S GROUP BY B")
    assert _rows(db, oracle_sql(q1)) == _rows(db, "SELECT COUNT(*) FROM R")
    assert _rows(db, oracle_sql(q2)) == _rows(db, "SELECT B, COUNT(*) FROM S GROUP BY B")


# Built-in function translations in the oracle agree with the evaluator's implementations
FUNCTION_CASES = [
    ("listmax", (1, 2.5, -3)), ("listmin", (4, 2, 7)), ("listmax", ("b", "a")),
    ("date_part", ("year", DATE, 19970304)), ("date_part", ("month", DATE, 19970304)),
    ("date_part", ("day", DATE, 19970304)),
    ("regexp_match", ("b.z", "xbqz")), ("regexp_match", ("^b", "abc")), ("regexp_match", ("^a[0-9]+$", "a12")),
    ("substring", ("hello", 1, 3)), ("substring", ("hello", 0, 10)),
    ("cast_int", (3.7,)), ("cast_int", (-3.7,)), ("cast_int", ("42",)), ("cast_int", (" -7x",)),
    ("cast_int", (DATE, 19970304)),
    ("cast_float", (3,)), ("cast_float", ("2.5",)),
    ("cast_string", (12,)), ("cast_string", (2.5,)), ("cast_string", (DATE, 19970304)),
    ("cast_date", ("1997-03-04",)),
    ("vec_length", (1, 2, 2.0)), ("vector_angle", (1, 0, 0, 1, 1, 0)),
    ("dihedral_angle", (1.0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1)),
    ("dihedral_angle", (0.3, 1.2, 0.1, 0.0, 0.0, 0.0, 1.1, 0.2, -0.4, 1.5, 1.0, 0.8)),
    ("radians", (180,)), ("degrees", (math.pi,)), ("pow", (2, 10)),
]


def _lit(v, t=None):
    if t == DATE:
        return A.Literal(v, DATE)
    return A.Literal(v, {int: INT, float: FLOAT, str: STRING}[type(v)])


@pytest.mark.parametrize("name, args", FUNCTION_CASES)
def test_builtin_translation_matches_evaluator(db, name, args):
    from toaster.calculus.functions import call
    lits, values = [], []
    it = iter(args)
    for a in it:
        lits.append(_lit(next(it), DATE) if a is DATE else _lit(a))
        values.append(lits[-1].value)
    q = one(f"SELECT {name}({', '.join(print_expr(x) for x in lits)}) AS v")
    (row,) = db.execute(oracle_sql(q)).fetchall()
    got = _norm(row[0])
    if name == "cast_string" and lits[0].type == DATE:
        values.append("date")     # the translator passes the argument's type (from_sql.py)
    want = call(name, values)
    if q.key_columns[0][1].type == FLOAT:
        assert isinstance(got, float) and got == pytest.approx(want, rel=1e-9, abs=1e-12)
    else:
        assert got == want


def test_oracle_refuses_hash():
    q = one("SELECT hash(A) FROM R")
    with pytest.raises(UnsupportedError, match="hash"):
        oracle_sql(q)


# ------------------------------------------------------------ issue 12: permissive forms

def test_order_by_generated_name_of_an_unaliased_target():
    q = one("SELECT A, SUM(B), A * 2 FROM R GROUP BY A ORDER BY __sql_sum_aggregate_1 DESC, __SQL_EXPRESSION_2")
    assert names(q.value_columns) == ["__SQL_SUM_AGGREGATE_1"]
    (by_sum, desc), (by_expr, _) = [(o.expr, o.descending) for o in q.select.order_by]
    assert isinstance(by_sum, A.AggCall) and by_sum.func == "SUM" and desc
    assert isinstance(by_expr, A.BinaryOp) and by_expr.op == "*"
    e = _error("SELECT A, SUM(B) FROM R GROUP BY A ORDER BY __SQL_SUM_AGGREGATE_2;", SemanticError)
    assert "unknown column __SQL_SUM_AGGREGATE_2" in e.message and (e.line, e.column) == (L, 45)


def test_oracle_sql_order_by_generated_name(db):
    q = one("SELECT A, SUM(B) FROM R GROUP BY A ORDER BY __SQL_SUM_AGGREGATE_1 DESC, A LIMIT 2")
    got = [tuple(map(_norm, r)) for r in db.execute(oracle_sql(q)).fetchall()]
    ref = [tuple(map(_norm, r)) for r in db.execute(
        "SELECT A, SUM(B) FROM R GROUP BY A ORDER BY SUM(B) DESC, A LIMIT 2").fetchall()]
    assert got == ref and len(got) == 2


def test_count_distinct_without_argument_counts_distinct_from_rows():
    q = one("SELECT R.A, COUNT(DISTINCT) FROM R, S WHERE R.B = S.B GROUP BY R.A")
    (name, call), = q.value_columns
    assert name == "__SQL_COUNT_AGGREGATE_1" and call.distinct and call.type == INT
    assert [(a.source, a.name) for a in call.args] == [("R", "A"), ("R", "B"), ("S", "B"), ("S", "C")]
    # a subquery's COUNT(DISTINCT) counts its own FROM rows, not the outer query's
    q = one("SELECT A FROM R WHERE A < (SELECT COUNT(DISTINCT) FROM S WHERE S.B = R.B)")
    (sub,) = nodes(q, A.AggCall)
    assert [(a.source, a.name) for a in sub.args] == [("S", "B"), ("S", "C")]
    assert "COUNT(DISTINCT S.B, S.C)" in print_query(q.select)
    e = _error("SELECT COUNT(DISTINCT) WHERE 1 = 1;", SemanticError)
    assert "needs a FROM clause" in e.message and (e.line, e.column) == (L, 8)
    e = _error("SELECT SUM(DISTINCT) FROM R;", SqlSyntaxError)
    assert "SUM(DISTINCT) needs an argument" in e.message and (e.line, e.column) == (L, 8)


def test_limit_in_an_operand_of_a_top_level_set_operation(db):
    q = one("(SELECT A, B FROM R ORDER BY A DESC, 2 LIMIT 3) UNION ALL (SELECT B, C FROM S)")
    left = q.select.left
    assert left.limit == 3 and [o.descending for o in left.order_by] == [True, False]
    assert q.select.right.limit is None
    got = _rows(db, oracle_sql(q))
    ref = _rows(db, "(SELECT A, B FROM R ORDER BY A DESC, B LIMIT 3) UNION ALL (SELECT B, C FROM S)")
    assert got == sorted((row + (n,) for row, n in Counter(ref).items()), key=repr) and got
    # an operand's ORDER BY without LIMIT changes no rows: dropped
    q = one("SELECT A FROM R ORDER BY A UNION (SELECT B FROM S)")
    assert q.select.left.order_by == ()


def test_operand_top_n_counts_copies_and_breaks_ties_by_the_row():
    from toaster.calculus.results import RowContext, TopValue, eval_result
    bag = {(1, 5): 2, (3, 1): 1, (3, 0): 2, (2, 7): 0}      # row -> multiplicity
    top = TopValue("M", ((0, True),), 4, INT)                # ORDER BY col 0 DESC LIMIT 4
    ctx = RowContext({"M": bag}, 2)
    assert {k: eval_result(top, k, ctx) for k in bag} == {(3, 0): 2, (3, 1): 1, (1, 5): 1, (2, 7): 0}
