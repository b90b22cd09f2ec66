"""IN / NOT IN / op SOME / op ALL over a subquery whose column can be NULL (issue 12), in SQL's
three-valued logic: `x NOT IN (SELECT s ...)` is unknown (the row dropped) where no s equals x
but some s is NULL, and true over an empty subquery even for a NULL x; `x op ALL (...)` likewise.
Each query runs on a hand-written stream whose batches bring a NULL into the subquery and take it
out again, and is compared with DuckDB after every batch; the answers must change along the
stream (the NULL cases happen). The random nullable queries of tests/test_query_gen.py generate
these forms too.
"""
from __future__ import annotations

import pytest

from null_streams import batches, run_against_duckdb
from toaster.pipeline import compile_sql

SCHEMA = "CREATE STREAM R(A int NULL, B int);\nCREATE STREAM T(C int NULL, D int);\n"

# (relation, sign, logical rows) per batch
STREAM = [
    ("R", 1, [(1, 1), (2, 1), (None, 2), (5, 2)]),
    ("T", 1, [(1, 1), (3, 2)]),                     # no NULL yet: NOT IN is decided
    ("T", 1, [(None, 1)]),                          # a NULL in the subquery: NOT IN unknown
    ("R", 1, [(3, 1), (4, 2)]),
    ("T", 1, [(None, 2), (7, 2)]),
    ("T", -1, [(None, 1)]),                         # group D = 1 loses its NULL again
    ("R", -1, [(None, 2)]),
    ("T", -1, [(None, 2), (1, 1), (3, 2), (7, 2)]),  # empty: x NOT IN () is true, NULL x too
    ("R", 1, [(None, 1)]),
    ("T", 1, [(2, 1)]),
]

QUERIES = [
    "SELECT COUNT(*) AS n FROM R WHERE R.A IN (SELECT T.C FROM T)",
    "SELECT COUNT(*) AS n FROM R WHERE R.A NOT IN (SELECT T.C FROM T)",
    "SELECT R.B, COUNT(*) AS n FROM R WHERE R.A NOT IN (SELECT T.C FROM T WHERE T.D = R.B) GROUP BY R.B",
    "SELECT SUM(R.B) AS s FROM R WHERE NOT (R.A IN (SELECT T.C FROM T))",
    "SELECT COUNT(*) AS n FROM R WHERE R.A > ALL (SELECT T.C FROM T)",
    "SELECT COUNT(*) AS n FROM R WHERE NOT (R.A <= ALL (SELECT T.C FROM T WHERE T.D = R.B))",
    "SELECT COUNT(*) AS n FROM R WHERE R.A < SOME (SELECT T.C FROM T)",
    "SELECT COUNT(*) AS n FROM R WHERE NOT (R.A >= SOME (SELECT T.C FROM T))",
    "SELECT R.A, R.B FROM R WHERE R.A NOT IN (SELECT T.C FROM T) OR R.B = 2",
]


def _run(sql, backend, mode):
    answers = set(run_against_duckdb(SCHEMA, sql, STREAM, backend, mode))
    assert len(answers) >= 3, "the stream must change the answer (not a vacuous pass)"


@pytest.mark.parametrize("backend, mode", [("calc", "tuple"), ("interp", "batch"), ("llvm", "tuple"),
                                           ("llvm", "batch")])
@pytest.mark.parametrize("sql", QUERIES)
def test_membership_with_null_subquery_columns_equals_duckdb(sql, backend, mode):
    _run(sql, backend, mode)


@pytest.mark.parametrize("sql", [QUERIES[2], QUERIES[5]])
def test_membership_with_null_subquery_columns_on_spark(sql):
    _run(sql, "spark", "batch")


def test_not_in_over_a_null_is_unknown_not_false():
    """The case that tells three-valued NOT IN from NOT EXISTS: R.A = 5 is in no T.C, but T has a
    NULL C, so 5 NOT IN (...) is unknown and the row is not counted."""
    comp = compile_sql(SCHEMA + QUERIES[1] + ";", mode="batch")
    engine = comp.engine("llvm")
    try:
        stream = batches(comp, STREAM)
        for batch in stream[:2]:
            engine.apply(batch)
        assert [tuple(r) for r in engine.result(comp.queries[0].name).rows] == [(2,)]    # 2 and 5
        engine.apply(stream[2])
        assert not any(r[0] for r in engine.result(comp.queries[0].name).rows)
    finally:
        engine.close()
