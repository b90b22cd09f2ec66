"""NULLs through derived relations (issue 12): FROM-subquery and set-operation columns that can
be NULL carry a null flag like nullable base columns. Each query runs on a hand-written stream
whose batches make the NULL cases happen (groups whose values are all NULL, NULL on both sides of
a set operation, deletes that bring them back) and is compared with DuckDB, NULL strictly as NULL,
after every batch; the random streams of the feature suite (null_from_subquery.sql,
null_set_operations.sql) complement them.
"""
from __future__ import annotations

import pytest

from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.nulls import physical_rows
from toaster.testing import Oracle, compare_results

SCHEMA = "CREATE STREAM R(A int, B int NULL, S string NULL);\nCREATE STREAM T(A int, C int NULL);\n"

# (relation, sign, logical rows) per batch
STREAM = [
    ("R", 1, [(1, None, "x"), (1, None, None), (2, None, "y")]),
    ("T", 1, [(1, None), (2, 3), (3, 4)]),
    ("R", 1, [(3, 4, None), (2, 3, "y")]),
    ("R", -1, [(2, 3, "y")]),
    ("T", -1, [(1, None)]),
    ("R", 1, [(1, 2, "x")]),
    ("R", -1, [(1, None, "x"), (1, None, None), (1, 2, "x")]),
]

QUERIES = [
    # an outer SUM over a SUM that is NULL where every B of the group is NULL
    "SELECT X.A, SUM(X.C) AS s, COUNT(X.C) AS n, COUNT(*) AS m FROM (SELECT R.A, SUM(R.B) AS C FROM R GROUP BY R.A) X GROUP BY X.A",
    # the derived column as a group key (NULL is one group) and in a result row
    "SELECT X.B, COUNT(*) AS n FROM (SELECT R.A, R.B FROM R) X GROUP BY X.B",
    "SELECT X.S, X.M FROM (SELECT R.S, MAX(R.B) AS M FROM R GROUP BY R.S) X",
    # a join on a derived nullable column never matches NULL with NULL
    "SELECT X.A, COUNT(*) AS n FROM (SELECT R.A, R.B FROM R) X, T WHERE X.B = T.C GROUP BY X.A",
    # IS NULL and comparisons over derived columns
    "SELECT COUNT(*) AS n FROM (SELECT R.A, AVG(R.B) AS V FROM R GROUP BY R.A) X WHERE X.V IS NULL",
    "SELECT COUNT(*) AS n FROM (SELECT R.A, MIN(R.B) AS V FROM R GROUP BY R.A) X WHERE NOT (X.V > 2)",
    # an empty scalar subquery and a HAVING over a NULL sum inside the FROM subquery
    "SELECT X.A, X.V FROM (SELECT R.A, (SELECT SUM(T.C) FROM T WHERE T.A = R.A) AS V FROM R) X",
    "SELECT X.A, X.S FROM (SELECT R.A, SUM(R.B) AS S FROM R GROUP BY R.A HAVING NOT (SUM(R.B) > 3)) X",
    # ungrouped: one row, NULL while no B is non-NULL
    "SELECT Y.M FROM (SELECT MIN(X.B) AS M FROM (SELECT R.B FROM R) X) Y",
    # set operations: NULL matches NULL (UNION, INTERSECT, EXCEPT), nullable on one side only
    "SELECT R.B FROM R UNION SELECT T.C FROM T",
    "SELECT R.B FROM R INTERSECT SELECT T.C FROM T",
    "SELECT R.B, R.A FROM R EXCEPT SELECT T.C, T.A FROM T",
    "SELECT R.A, R.B FROM R UNION ALL SELECT T.A, T.A FROM T",
    "SELECT U.B, COUNT(*) AS n FROM (SELECT R.B FROM R UNION ALL SELECT T.C FROM T) U GROUP BY U.B",
    "SELECT U.B, SUM(U.A) AS s FROM (SELECT R.A, R.B FROM R INTERSECT SELECT T.A, T.C FROM T) U GROUP BY U.B",
    "(SELECT R.A FROM R ORDER BY R.A DESC LIMIT 2) UNION (SELECT T.C FROM T)",
]


def _batches(comp):
    decls = {d.name: d for d in comp.stage("calc").relations}
    return [Batch.from_rows(rel, decls[rel].types, physical_rows(decls[rel], rows), signs=[sign] * len(rows))
            for rel, sign, rows in STREAM]


@pytest.mark.parametrize("backend, mode", [("calc", "tuple"), ("interp", "tuple"), ("interp", "batch"),
                                           ("llvm", "tuple"), ("llvm", "batch")])
@pytest.mark.parametrize("sql", QUERIES)
def test_derived_nulls_equal_duckdb_after_every_batch(sql, backend, mode):
    comp = compile_sql(SCHEMA + sql + ";", mode=mode)
    engine = comp.engine(backend)
    oracle = Oracle(comp.stage("calc").relations)
    saw_null = saw_rows = False
    try:
        for n, batch in enumerate(_batches(comp), start=1):
            engine.apply(batch)
            oracle.apply(batch)
            got = engine.result(comp.queries[0].name)
            want = oracle.query(comp.oracle_sql[0])
            diffs = compare_results(got, want, strict_nulls=True)
            assert not diffs, f"after batch {n}: {diffs}"
            saw_null |= any(None in row for row in got.rows)
            saw_rows |= bool(got.rows)
    finally:
        oracle.close()
        engine.close()
    assert saw_rows, "the test must not pass vacuously"
    # the join, the counts and HAVING (it drops NULL groups) never show NULL; the others must
    assert saw_null or " T WHERE" in sql or "COUNT(*) AS n FROM (" in sql or "HAVING" in sql


@pytest.mark.parametrize("sql", QUERIES)
def test_nulls_add_no_re_evaluation(sql):
    """NULL-ness is part of the maps' keys and values: a query over nullable derived columns is
    maintained exactly as the same query without NULLs (no relation re-evaluated that is not
    re-evaluated there)."""
    with_nulls = _notes_reevaluated(SCHEMA, sql)
    without = _notes_reevaluated(SCHEMA.replace(" NULL", ""), sql)
    assert with_nulls <= without, (with_nulls, without)


def _notes_reevaluated(schema: str, sql: str) -> set:
    out = set()
    for note in compile_sql(schema + sql + ";").stage("m3").notes:
        if "re-evaluated on updates to " in note:
            out |= set(note.split("re-evaluated on updates to ")[1].split(";")[0].split(", "))
        if "re-evaluated from base-relation maps" in note:
            out.add("*")
    return out
