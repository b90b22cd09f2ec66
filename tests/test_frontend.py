"""SQL frontend: parsing, name resolution, result shapes and user-facing errors."""
from __future__ import annotations

import pytest

from toaster.errors import SemanticError, SqlSyntaxError, UnsupportedError
from toaster.frontend.parser import parse_sql
from toaster.frontend.resolve import resolve_program
from toaster.pipeline import compile_sql

SCHEMA = """
create stream R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv (delimiter := '|');
CREATE STREAM S(B int, C float);
CREATE TABLE T(C int, D date, N varchar(10));
"""


def resolve(sql: str):
    return resolve_program(parse_sql(SCHEMA + sql))


def test_case_insensitive_names_and_comments():
    (q,) = resolve("/* block\ncomment */ select r1.a, Sum(R1.B) -- trailing\n from r R1 group by R1.A")
    assert [n for n, _ in q.key_columns] == ["A"]
    assert [n for n, _ in q.value_columns] == ["__SQL_SUM_AGGREGATE_1"]


def test_source_parameters_are_kept():
    prog = parse_sql(SCHEMA)
    r = prog.relations[0]
    assert r.source.path == "r.csv" and r.source.param("delimiter") == "|"
    assert [c.type.value for c in prog.relations[2].columns] == ["int", "date", "string"]


def test_result_shape_keys_then_values_and_names():
    (q,) = resolve("SELECT SUM(R.A) AS total, R.B FROM R GROUP BY R.B, R.A")
    assert [n for n, _ in q.key_columns] == ["B", "A"]   # selected first, then GROUP BY order
    assert [n for n, _ in q.value_columns] == ["TOTAL"]


def test_several_selects_get_query_prefixes():
    qs = resolve("SELECT COUNT(*) FROM R; SELECT R.A FROM R")
    assert [n for n, _ in qs[0].value_columns] == ["QUERY_1___SQL_COUNT_AGGREGATE_1"]
    assert [n for n, _ in qs[1].value_columns] == ["QUERY_2_COUNT"]
    assert [n for n, _ in qs[1].key_columns] == ["A"]


def _error(sql: str, cls):
    with pytest.raises(cls) as info:
        compile_sql(SCHEMA + sql, source_file="q.sql")
    return info.value


@pytest.mark.parametrize("sql, message, line, column", [
    ("SELECT SUM(Z) FROM R;", "unknown column Z", 5, 12),
    ("SELECT SUM(B) FROM R, S;", "ambiguous column B", 5, 12),
    ("SELECT SUM(Q.A) FROM R;", "unknown relation or alias Q", 5, 12),
    ("SELECT SUM(R.A) FROM R, R;", "duplicate relation name R", 5, 25),
    ("SELECT SUM(R.A) FROM U;", "unknown relation U", 5, 22),
    ("SELECT SUM(T.N) FROM T;", "SUM needs a number", 5, 12),
    ("SELECT COUNT(*) FROM T WHERE T.D = 3;", "cannot compare date with int", 5, 34),
    ("SELECT R.B, SUM(R.A) FROM R;", "must appear in GROUP BY", 5, 8),
])
def test_semantic_errors_have_positions(sql, message, line, column):
    e = _error(sql, SemanticError)
    assert message in e.message
    assert (e.file, e.line, e.column) == ("q.sql", line, column)


@pytest.mark.parametrize("sql, what", [
    ("SELECT MAX(R.A) FROM R;", "MAX aggregate"),
    ("SELECT COUNT(*) FROM R WHERE R.A = 1 OR R.B = 2;", "OR"),
    ("SELECT COUNT(*) FROM R WHERE R.A IN (1, 2);", "IN (...)"),
    ("SELECT COUNT(*) FROM R JOIN S ON R.B = S.B;", "JOIN ... ON"),
    ("SELECT SUM(R.A) * 2 FROM R;", "arithmetic over aggregates"),
    ("SELECT COUNT(*) FROM (SELECT A FROM R) q;", "subquery in FROM"),
    ("SELECT R.A + 1 FROM R;", "not a plain column"),
])
def test_unsupported_constructs_are_named(sql, what):
    e = _error(sql, UnsupportedError)
    assert what in e.message
    assert e.line == 5


def test_syntax_error_position():
    e = _error("SELECT SUM(R.A) FROM R WHERE (R.A = 1", SqlSyntaxError)
    assert e.line == 5 and e.column is not None
    assert str(e).startswith("q.sql:5:")
