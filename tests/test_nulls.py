"""NULLs at the boundaries (issue 12): the API, CSV files, result formats and refusals.

The semantics of NULLs in queries are checked against DuckDB by the feature queries
tests/queries/features/null_*.sql and outer_*.sql on every engine (test_query_suite.py) and by the
property test of test_query_gen.py; here: how NULLs get in and out, and what is refused.
"""
from __future__ import annotations

import datetime
import re

import pyarrow as pa
import pytest

from toaster.errors import InputError, UnsupportedError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.csv_source import read_source
from toaster.runtime.output import format_results
from toaster.testing import Oracle, compare_results

SQL = """
CREATE STREAM R(A int, B int NULL, S string NULL, D date NULL, F float NULL) FROM FILE 'r.csv' LINE DELIMITED CSV({delim});
SELECT R.S, COUNT(*) AS n, SUM(R.B) AS b, MAX(R.D) AS d, SUM(R.F) AS f FROM R GROUP BY R.S;
SELECT R.A, R.B FROM R WHERE R.D IS NULL OR R.F IS NOT NULL;
"""
ROWS = [(1, None, "x", None, 1.5), (2, 3, None, "1995-01-02", None), (3, None, None, None, None),
        (4, 5, "x", "1996-03-04", 2.25)]
CSV_LINES = "1,,x,,1.5\n2,3,,1995-01-02,\n3,,,,\n4,5,x,1996-03-04,2.25\n"


def _oracle_rows(comp, batches):
    oracle = Oracle(comp.stage("calc").relations)
    for b in batches:
        oracle.apply(b)
    return oracle, [oracle.query(sql) for sql in comp.oracle_sql]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_api_rows_with_none_equal_duckdb(backend):
    comp = compile_sql(SQL.format(delim=""))
    engine = comp.engine(backend)
    for row in ROWS:
        engine.insert("R", row)
    engine.delete("R", ROWS[0])
    decl = comp.stage("calc").relations[0]
    from toaster.runtime.nulls import physical_rows
    batch = Batch.from_rows("R", decl.types, physical_rows(decl, [list(r) for r in ROWS[1:]]))
    oracle, expected = _oracle_rows(comp, [batch])
    for q, rows in zip(comp.queries, expected):
        got = engine.result(q.name)
        assert any(None in r for r in got.rows), "the test must see NULLs"
        assert not compare_results(got, rows, strict_nulls=True)
    oracle.close()


def test_none_in_a_column_not_declared_null_is_an_input_error():
    engine = compile_sql(SQL.format(delim="")).engine("interp")
    with pytest.raises(InputError, match="A"):
        engine.insert("R", (None, 1, "x", None, 1.0))
    assert engine.results()[0].rows == ()          # the views are untouched


def test_arrow_columns_with_nulls_are_accepted_as_they_are():
    comp = compile_sql(SQL.format(delim=""))
    engine = comp.engine("llvm")
    as_arrow = [lambda v: v] * 3 + [lambda v: None if v is None else datetime.date.fromisoformat(v), lambda v: v]
    cols = [pa.array([as_arrow[j](r[j]) for r in ROWS], t) for j, t in
            enumerate([pa.int64(), pa.int64(), pa.string(), pa.date32(), pa.float64()])]
    engine.apply(Batch.from_columns("R", cols))
    reference = comp.engine("interp")
    for row in ROWS:
        reference.insert("R", row)
    assert engine.results() == reference.results()


@pytest.mark.parametrize("delim", ["", "delimiter := '|'", "delimiter := '||'"])
def test_empty_csv_fields_of_nullable_columns_are_null(tmp_path, delim):
    """Both readers (Arrow for one-byte delimiters, the line parser for longer ones)."""
    sep = "," if not delim else delim.split("'")[1]
    (tmp_path / "r.csv").write_text(CSV_LINES.replace(",", sep))
    comp = compile_sql(SQL.format(delim=delim))
    decl = comp.stage("calc").relations[0]
    batches = read_source(decl, base_dir=str(tmp_path))
    engine = comp.engine("interp")
    for b in batches:
        engine.apply(b)
    reference = comp.engine("interp")
    for row in ROWS:
        reference.insert("R", row)
    assert engine.results() == reference.results()


def test_an_empty_field_of_a_column_not_declared_null_is_an_error(tmp_path):
    (tmp_path / "r.csv").write_text("1,2,x,,\n,3,y,,\n")
    decl = compile_sql(SQL.format(delim="")).stage("calc").relations[0]
    with pytest.raises(InputError) as e:
        read_source(decl, base_dir=str(tmp_path))
    assert (e.value.line, e.value.column) == (2, 1)


def test_null_is_printed_per_format():
    engine = compile_sql(SQL.format(delim="")).engine("interp")
    engine.insert("R", (1, None, None, None, None))
    results = engine.results()
    assert "NULL" in format_results(results, "table")
    assert '"rows": [[null, 1, null, null, null]]' in format_results(results, "json")
    assert ",1,,," in format_results(results, "csv")


def test_nullable_declarations_print_and_parse_back():
    comp = compile_sql(SQL.format(delim=""))
    text = str(comp.stage("calc"))
    assert "B int NULL" in text and "R_B__NULL" in text and "NULLFLAG" in text


@pytest.mark.parametrize("sql, what", [
    ("SELECT SUBSTRING(NULL, 1, 2) AS x FROM R;", "NULL as an argument of SUBSTRING"),
])
def test_what_is_not_supported_yet_is_refused_by_name(sql, what):
    decls = "CREATE STREAM R(A int, B int NULL); CREATE STREAM S(B int, C int); CREATE STREAM T(C int, D int);\n"
    with pytest.raises(UnsupportedError, match=re.escape(what)):
        compile_sql(decls + sql).stage("calc")


@pytest.mark.parametrize("sql, types", [
    ("SELECT R.A, NULL AS N FROM R;", ["int", "int"]),                       # alone: int, as DuckDB stores it
    ("SELECT COALESCE(NULL, R.S) AS x FROM R;", ["string"]),
    ("SELECT CASE WHEN R.A > 1 THEN NULL ELSE R.F END AS x FROM R;", ["float"]),
    ("SELECT R.S, NULL AS x FROM R UNION ALL SELECT NULL, R2.F FROM R R2;", ["string", "float"]),
])
def test_the_null_literal_is_typed_by_its_context(sql, types):
    decls = "CREATE STREAM R(A int, B int NULL, S string NULL, F float);\n"
    result = compile_sql(decls + sql).stage("calc").queries[0]
    shown = [c for i, c in enumerate(result.key_columns) if i not in result.flag_keys]
    assert [str(c.type) for c in shown] == types
