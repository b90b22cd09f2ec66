"""Scalar subqueries that are not aggregates (issue 12 item 4): a lookup with more than one row
is an error naming the subquery on every engine, as in DuckDB, and an error only while it lasts."""
from __future__ import annotations

import pytest

from toaster.errors import CardinalityError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import run_differential
from toaster.types import INT

SCHEMA = "CREATE STREAM R(A int, B int);\nCREATE STREAM S(B int, C int);\n"
UNCORRELATED = SCHEMA + "SELECT R.A, COUNT(*) AS n FROM R WHERE R.B = (SELECT S.C FROM S WHERE S.B = 2) GROUP BY R.A;"
CORRELATED = SCHEMA + "SELECT R.A, SUM(R.B) AS s FROM R WHERE 25 > (SELECT S.C FROM S WHERE S.B = R.B) GROUP BY R.A;"


def _batch(rel, rows, signs=None):
    return Batch.from_rows(rel, (INT, INT), rows, signs)


# one S row, then a second one (an error), then the second deleted again (no error)
STREAM = [_batch("R", [(1, 10), (2, 2), (3, 2), (4, 10)]),
          _batch("S", [(2, 10), (1, 5)]),
          _batch("S", [(2, 20)]),
          _batch("S", [(2, 20)], [-1])]


@pytest.mark.parametrize("backend,mode", [("calc", "tuple"), ("interp", "tuple"), ("interp", "batch"),
                                          ("llvm", "tuple"), ("llvm", "batch")])
@pytest.mark.parametrize("sql", [UNCORRELATED, CORRELATED], ids=["uncorrelated", "correlated"])
def test_several_rows_is_an_error_as_in_duckdb(sql, backend, mode):
    # the harness requires toaster and DuckDB to agree after every batch, errors included
    report = run_differential(sql, backend, STREAM, mode=mode)
    assert report.checks == len(STREAM) and report.nonempty_checks >= 2


@pytest.mark.parametrize("sql", [UNCORRELATED, CORRELATED], ids=["uncorrelated", "correlated"])
def test_error_names_the_subquery(sql):
    line = 3
    column = sql.splitlines()[2].index("(SELECT S.C") + 1      # where the subquery opens
    engine = compile_sql(sql).engine("interp")
    for b in STREAM[:3]:
        engine.apply(b)
    with pytest.raises(CardinalityError, match=f"more than one row returned by the scalar subquery at "
                                               f"line {line}, column {column}"):
        engine.results()
