"""ORDER BY a value that can be NULL (issue 12): NULLs sort last in both directions, DuckDB's
default (`NULLS LAST`), at the top level and in a set-operation operand's ORDER BY ... LIMIT.
Each query runs on a hand-written stream where NULL keys come and go and is compared with DuckDB
after every batch, row order included where the query has a LIMIT (the oracle's check)."""
from __future__ import annotations

import pytest

from null_streams import assert_calc_round_trip, run_against_duckdb
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.nulls import physical_rows

SCHEMA = "CREATE STREAM R(A int NULL, B int, F float NULL);\nCREATE STREAM S(C int);\n"

STREAM = [
    ("R", 1, [(1, 1, 0.5), (None, 1, None), (3, 2, 2.0), (2, 2, None)]),
    ("S", 1, [(4,), (5,)]),
    ("R", 1, [(None, 3, 1.5), (4, 3, 3.0)]),
    ("R", -1, [(3, 2, 2.0), (1, 1, 0.5)]),
    ("R", 1, [(5, 1, 0.25)]),
    ("R", -1, [(None, 1, None), (None, 3, 1.5)]),
]

QUERIES = [
    "SELECT R.A, R.B FROM R ORDER BY R.A DESC LIMIT 3",
    "SELECT R.A, R.B FROM R ORDER BY R.A LIMIT 3",
    "SELECT R.B, SUM(R.F) AS s FROM R GROUP BY R.B ORDER BY SUM(R.F) DESC LIMIT 2",
    "SELECT R.A, COUNT(*) AS n FROM R GROUP BY R.A ORDER BY R.A",
    "(SELECT R.A FROM R ORDER BY R.A DESC LIMIT 2) UNION (SELECT S.C FROM S)",
    "(SELECT R.A, R.B FROM R ORDER BY R.A, R.B DESC LIMIT 2) UNION ALL (SELECT S.C, S.C FROM S)",
]


@pytest.mark.parametrize("backend, mode", [("calc", "tuple"), ("interp", "batch"), ("llvm", "tuple")])
@pytest.mark.parametrize("sql", QUERIES)
def test_order_by_nullable_values_equals_duckdb(sql, backend, mode):
    seen = run_against_duckdb(SCHEMA, sql, STREAM, backend, mode)
    assert any(None in row for rows in seen for row in rows) or "DESC LIMIT" in sql, \
        "the NULL keys must reach the result"


def test_nulls_last_in_both_directions():
    for desc, want in (("", [(1, 1), (2, 1), (None, 1)]), (" DESC", [(2, 1), (1, 1), (None, 1)])):   # (A, count)
        comp = compile_sql(SCHEMA + f"SELECT R.A FROM R ORDER BY R.A{desc} LIMIT 3;", mode="batch")
        engine = comp.engine("llvm")
        try:
            decl = comp.stage("calc").relations[0]
            engine.apply(Batch.from_rows("R", decl.types, physical_rows(decl, [(None, 1, None), (2, 1, None),
                                                                               (1, 1, None)])))
            assert [tuple(r) for r in engine.result(comp.queries[0].name).rows] == want
        finally:
            engine.close()


def test_a_top_n_over_a_nullable_column_prints_its_flag_and_parses_back():
    text = assert_calc_round_trip(compile_sql(SCHEMA + QUERIES[4] + ";").stage("calc"))
    assert "DESC NULL @1" in text, text
