"""SQL frontend: parsing, normalization, name resolution, types, result shapes, user-facing errors.
The DuckDB oracle printer is tested in test_frontend_oracle.py."""
from __future__ import annotations

import pytest

from toaster.errors import SemanticError, SqlSyntaxError, UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.parser import parse_sql, add_interval
from toaster.frontend.printer import print_query, print_sql_program
from toaster.frontend.resolve import resolve_program, iter_nodes, output_columns
from toaster.types import INT, FLOAT, DATE, STRING, date_to_int

SCHEMA = """
create stream R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv (delimiter := '|');
CREATE STREAM S(B int, C float);
CREATE TABLE T(C int, D date, N varchar(10));
CREATE STREAM E(A int, B int);
"""
SCHEMA_LINES = SCHEMA.count("\n")   # statements after SCHEMA start on line SCHEMA_LINES + 1


def resolve(sql: str):
    return resolve_program(parse_sql(SCHEMA + sql, "q.sql"))


def one(sql: str):
    (q,) = resolve(sql)
    return q


def names(cols):
    return [n for n, _ in cols]


def nodes(q, cls):
    return [n for n in iter_nodes(q) if isinstance(n, cls)]


# ------------------------------------------------------------------ statements

def test_case_insensitive_names_and_comments():
    q = one("/* block\ncomment */ select r1.a, Sum(R1.B) -- trailing\n from r R1 group by R1.A")
    assert names(q.key_columns) == ["A"]
    assert names(q.value_columns) == ["__SQL_SUM_AGGREGATE_1"]


def test_source_parameters_are_kept():
    prog = parse_sql(SCHEMA)
    r = prog.relations[0]
    assert r.source.path == "r.csv" and r.source.param("delimiter") == "|"
    assert [c.type.value for c in prog.relations[2].columns] == ["int", "date", "string"]


def test_all_column_types_and_orderbook_adaptor():
    prog = parse_sql("""CREATE STREAM bids(T float, ID int, BROKER_ID integer, VOLUME double, PRICE decimal)
        FROM FILE 'feed/orders.csv' LINE DELIMITED orderbook (deterministic := 'yes', book := 'bids', brokers := '4');
        CREATE TABLE x(a char(3), b varchar(20), c string, d date, e DECIMAL(10, 2))""")
    bids, x = prog.relations
    assert bids.kind == "stream" and x.kind == "table"
    assert bids.source.adaptor == "orderbook"
    assert bids.source.params == (("deterministic", "yes"), ("book", "bids"), ("brokers", "4"))
    assert bids.types == (FLOAT, INT, INT, FLOAT, FLOAT)
    assert x.types == (STRING, STRING, STRING, DATE, FLOAT)


def test_include_create_function_and_several_statements(tmp_path):
    (tmp_path / "schema.sql").write_text("CREATE STREAM R(A int, B int);\n")
    prog = parse_sql(f"INCLUDE 'schema.sql';\nCREATE FUNCTION cos(x double) RETURNS double AS EXTERNAL 'cos';\n"
                     "SELECT SUM(cos(A)) FROM R; SELECT A FROM R", base_dir=str(tmp_path))
    assert [r.name for r in prog.relations] == ["R"]
    (f,) = prog.functions
    assert (f.name, f.arg_types, f.return_type, f.external) == ("cos", (FLOAT,), FLOAT, "cos")
    q1, q2 = resolve_program(prog)
    (call,) = nodes(q1.select, A.FuncCall)
    assert call.name == "cos" and call.type == FLOAT
    assert names(q1.value_columns) == ["QUERY_1___SQL_SUM_AGGREGATE_1"]
    assert names(q2.value_columns) == ["QUERY_2_COUNT"]


def test_relations_and_functions_must_be_declared_before_use():
    with pytest.raises(SemanticError, match=r"unknown relation S \(it is declared after"):
        resolve_program(parse_sql("CREATE STREAM R(A int);\nSELECT COUNT(*) FROM S;\nCREATE STREAM S(B int);"))
    with pytest.raises(SemanticError, match="unknown function F"):
        resolve_program(parse_sql("CREATE STREAM R(A int);\nSELECT SUM(f(A)) FROM R;\n"
                                  "CREATE FUNCTION f(x int) RETURNS int AS EXTERNAL 'f';"))


def test_strings_keep_case_and_semicolons_and_doubled_quotes():
    q = one("SELECT COUNT(*) FROM T WHERE T.N = 'a;B''c'")
    (lit,) = [n for n in nodes(q.select, A.Literal) if n.type == STRING]
    assert lit.value == "a;B'c"


# -------------------------------------------------------------- normalizations

def test_between_in_list_and_not_normalized():
    q = one("SELECT COUNT(*) FROM R WHERE A BETWEEN 1 AND 3 AND NOT A IN LIST (1, 2) AND B NOT IN (4, 5) "
            "AND A <> 7 AND B NOT BETWEEN 8 AND 9")
    ge, le, c2, c3, c4, c5 = q.select.where.args   # the BETWEEN's And is merged into the conjunction
    assert [ge.op, le.op] == [">=", "<="] and ge.left == le.left
    assert isinstance(c2, A.NotCond) and isinstance(c2.arg, A.Or) and len(c2.arg.args) == 2
    assert isinstance(c3, A.NotCond) and [c.op for c in c3.arg.args] == ["=", "="]
    assert isinstance(c4, A.Comparison) and c4.op == "!="
    assert isinstance(c5, A.NotCond) and isinstance(c5.arg, A.And)


def test_subquery_predicates_normalized():
    q = one("SELECT COUNT(*) FROM R WHERE NOT EXISTS (SELECT * FROM S WHERE S.B = R.B) "
            "AND NOT (A IN (SELECT B FROM S)) AND A < ANY (SELECT B FROM S) AND A >= ALL (SELECT B FROM S) "
            "AND NOT EXISTS (SELECT 1 FROM T)")
    ex, inq, some, all_, ex2 = q.select.where.args
    assert isinstance(ex, A.Exists) and ex.negated
    assert isinstance(inq, A.InQuery) and inq.negated
    assert (some.quantifier, some.op, all_.quantifier, all_.op) == ("SOME", "<", "ALL", ">=")
    # the correlated column of the EXISTS subquery points at the outer FROM item
    (corr,) = [c for c in nodes(ex.query, A.ColumnRef) if c.name == "B" and c.qualifier == "R"]
    assert corr.source == "R" and corr.type == INT


def test_case_extract_cast_interval_normalized():
    q = one("SELECT CASE A WHEN 1 THEN 2.5 WHEN 2 THEN 3 END AS x, EXTRACT(Year FROM DATE('1997-03-04')), "
            "DATE_PART('MONTH', T.D), CAST(A AS double), cast(T.C AS varchar), cast(N AS date), CAST(2.7 AS int), "
            "DATE('1998-12-01') - INTERVAL '90' DAY, DATE('2020-01-31') + INTERVAL '1' MONTH, "
            "DATE '1999-02-28' + INTERVAL '1' YEAR FROM R, T")
    t = [x.expr for x in q.select.targets]
    assert isinstance(t[0], A.Case) and t[0].else_ is None and t[0].type == FLOAT
    assert all(isinstance(c, A.Comparison) and c.op == "=" for c, _ in t[0].whens)
    assert t[1].name == "date_part" and t[1].args[0].value == "year" and t[1].type == INT
    assert t[2].args[0].value == "month"
    assert [e.name for e in t[3:7]] == ["cast_float", "cast_string", "cast_date", "cast_int"]
    assert [e.type for e in t[3:7]] == [FLOAT, STRING, DATE, INT]
    assert [(e.value, e.type) for e in t[7:]] == [(19980902, DATE), (20200229, DATE), (20000228, DATE)]


def test_interval_folding_agrees_with_duckdb():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for date, n, unit in [("2020-01-31", 1, "MONTH"), ("1998-12-01", -90, "DAY"), ("2020-02-29", 1, "YEAR"),
                          ("1995-03-15", -3, "MONTH"), ("1999-12-31", 1, "DAY"), ("2001-10-31", 13, "MONTH")]:
        (got,), = con.execute(f"SELECT CAST(DATE '{date}' + INTERVAL ({n}) {unit} AS DATE)").fetchall()
        assert add_interval(date_to_int(date), n, unit) == got.year * 10000 + got.month * 100 + got.day


# ------------------------------------------------------------------ resolution

def test_joins_flattened_and_aliases_unique_in_program():
    q1, q2 = resolve("SELECT COUNT(*) FROM R JOIN S ON R.B = S.B INNER JOIN T ON S.C < T.C CROSS JOIN R r2;"
                     "SELECT COUNT(*) FROM R, (SELECT * FROM R WHERE R.A > 1) R_2 WHERE R.A = R_2.B")
    items = q1.select.from_items
    assert [(i.relation, i.alias) for i in items] == [("R", "R"), ("S", "S"), ("T", "T"), ("R", "R2")]
    assert [c.op for c in q1.select.where.args] == ["=", "<"]
    aliases = [n.alias for q in (q1, q2) for n in iter_nodes(q.select) if isinstance(n, (A.RelItem, A.SubqueryItem))]
    assert len(aliases) == len(set(aliases)) == 7
    # a written alias R_2 is never handed out to a renamed R
    assert sorted(a for a, _ in q2.relations) == ["R_3", "R_4"]
    assert all(isinstance(i, (A.RelItem, A.SubqueryItem)) for q in (q1, q2)
               for s in nodes(q.select, A.Select) for i in s.from_items)


def test_natural_join_equates_shared_columns_and_star_keeps_both():
    q = one("SELECT * FROM R NATURAL JOIN S")
    assert names(q.key_columns) == ["A", "B", "B_2", "C"]
    (eq,) = [q.select.where]
    assert (eq.left.source, eq.right.source, eq.left.name) == ("R", "S", "B")
    # an unqualified shared column is not ambiguous after NATURAL JOIN
    assert one("SELECT B FROM R NATURAL JOIN S").key_columns[0][1].source == "R"
    # no shared columns: a cross product
    q = one("SELECT COUNT(*) FROM R NATURAL JOIN T")
    assert q.select.where is None and len(q.select.from_items) == 2


def test_rel_star_and_subquery_columns():
    q = one("SELECT q.*, S.* FROM (SELECT A, B + 1, SUM(A) AS total FROM R GROUP BY A, B + 1) q, S")
    assert names(q.key_columns) == ["A", "__SQL_EXPRESSION_1", "TOTAL", "B", "C"]
    sub = q.select.from_items[0]
    assert isinstance(sub, A.SubqueryItem) and sub.alias == "Q"
    assert output_columns(sub.query) == (("A", INT), ("__SQL_EXPRESSION_1", INT), ("TOTAL", INT))
    ref = q.key_columns[1][1]
    assert (ref.source, ref.name, ref.type) == ("Q", "__SQL_EXPRESSION_1", INT)


def test_generated_names_follow_target_list_order():
    # DIALECT.md §5: inner target lists in the SELECT list finish first; FROM subqueries after
    q = one("SELECT SUM(B * (SELECT SUM(C) FROM S)) FROM R")
    assert names(q.value_columns) == ["__SQL_SUM_AGGREGATE_2"]
    q = one("SELECT SUM(q.B) FROM (SELECT B, SUM(C) FROM S GROUP BY B) q")
    assert names(q.value_columns) == ["__SQL_SUM_AGGREGATE_1"]
    assert output_columns(q.select.from_items[0].query)[1][0] == "__SQL_SUM_AGGREGATE_2"
    q = one("SELECT COUNT(DISTINCT A, B), AVG(A), MIN(B), MAX(B), A * SUM(B) / 2, SUM(A) AS s FROM R GROUP BY A")
    assert names(q.value_columns) == ["__SQL_COUNT_AGGREGATE_1", "__SQL_AVG_AGGREGATE_2", "__SQL_MIN_AGGREGATE_3",
                                      "__SQL_MAX_AGGREGATE_4", "__SQL_EXPRESSION_5", "S"]
    assert [e.type for _, e in q.value_columns] == [INT, FLOAT, INT, INT, FLOAT, INT]


def test_result_shape_keys_then_values_and_names():
    q = one("SELECT SUM(R.A) AS total, R.B FROM R GROUP BY R.B, R.A")
    assert names(q.key_columns) == ["B", "A"]   # selected first, then GROUP BY order
    assert names(q.value_columns) == ["TOTAL"]
    q = one("SELECT A + 1 AS k, 5, SUM(B) FROM R GROUP BY k, B * 2")
    assert names(q.key_columns) == ["K", "__SQL_EXPRESSION_1", "__SQL_GROUP_BY_2"]
    assert isinstance(q.key_columns[0][1], A.BinaryOp) and q.select.group_by[0] == q.key_columns[0][1]
    q = one("SELECT A + B, A FROM R")
    assert not q.is_aggregate and names(q.key_columns) == ["__SQL_EXPRESSION_1", "A"]
    assert q.value_columns == (("COUNT", None),)


def test_several_selects_get_query_prefixes():
    qs = resolve("SELECT COUNT(*) FROM R; SELECT R.A FROM R")
    assert names(qs[0].value_columns) == ["QUERY_1___SQL_COUNT_AGGREGATE_1"]
    assert names(qs[1].value_columns) == ["QUERY_2_COUNT"]
    assert names(qs[1].key_columns) == ["A"]


def test_set_operations_resolved():
    q = one("SELECT A, B FROM R UNION ALL SELECT S.B, S.C FROM S EXCEPT SELECT C, C FROM T INTERSECT SELECT 1, 2")
    assert isinstance(q.select, A.SetOp) and q.select.op == "EXCEPT"
    assert q.select.left.op == "UNION ALL" and q.select.right.op == "INTERSECT"
    assert [(n, c.type) for n, c in q.key_columns] == [("A", INT), ("B", FLOAT)]
    assert names(q.value_columns) == ["COUNT"] and not q.is_aggregate


def test_select_without_from_having_order_limit_distinct():
    q = one("SELECT 1 AS x WHERE 2 > 1")
    assert q.select.from_items == () and names(q.key_columns) == ["X"]
    q = one("SELECT DISTINCT B, SUM(A) AS s FROM R GROUP BY B HAVING SUM(A) > 2 AND B < 10 ORDER BY s DESC, 1 LIMIT 3")
    assert q.select.distinct and q.select.limit == 3
    assert isinstance(q.select.having.args[0].left, A.AggCall)
    assert [(type(o.expr).__name__, o.descending) for o in q.select.order_by] == [("AggCall", True), ("ColumnRef", False)]


def test_types_promotion_division_and_case():
    q = one("SELECT A + S.C, A * 2, A / 2, -A, CASE WHEN A > 1 THEN 1 ELSE 2.0 END, listmax(A, 1.5), "
            "listmin(A, 2), (SELECT SUM(C) FROM S), substring(N, 0, 2), regexp_match('a.', N), "
            "vec_length(A, R.B, 1), pow(2, 3), hash(N) FROM R, S, T")
    assert [t.expr.type for t in q.select.targets] == [FLOAT, INT, FLOAT, INT, FLOAT, FLOAT, INT, FLOAT,
                                                       STRING, INT, FLOAT, FLOAT, INT]


def test_sql_stage_dump_reparses_to_the_same_shape():
    sql = ("SELECT r1.A, SUM(S.C * 2) AS s FROM R r1 JOIN S ON r1.B = S.B WHERE r1.A IN LIST (1, 2) "
           "AND EXISTS (SELECT * FROM T WHERE T.C = r1.A) GROUP BY r1.A")
    prog = parse_sql(SCHEMA + sql)
    qs = resolve_program(prog)
    text = print_sql_program(prog.relations, qs)
    again = resolve_program(parse_sql(text))
    assert [(names(q.key_columns), names(q.value_columns)) for q in again] == \
        [(names(q.key_columns), names(q.value_columns)) for q in qs]
    assert print_query(again[0].select) == print_query(qs[0].select)


# ---------------------------------------------------------------------- errors

def _error(sql: str, cls):
    with pytest.raises(cls) as info:
        resolve(sql)
    return info.value


L = SCHEMA_LINES + 1


@pytest.mark.parametrize("sql, message, column", [
    ("SELECT SUM(Z) FROM R;", "unknown column Z", 12),
    ("SELECT SUM(B) FROM R, S;", "ambiguous column B", 12),
    ("SELECT SUM(Q.A) FROM R;", "unknown relation or alias Q", 12),
    ("SELECT SUM(R.Z) FROM R;", "R has no column Z", 12),
    ("SELECT SUM(R.A) FROM R, R;", "duplicate relation name R", 25),
    ("SELECT COUNT(*) FROM R NATURAL JOIN R;", "duplicate relation name R", 37),
    ("SELECT SUM(R.A) FROM U;", "unknown relation U", 22),
    ("SELECT SUM(T.N) FROM T;", "SUM needs a number", 12),
    ("SELECT AVG(T.D) FROM T;", "AVG needs a number", 12),
    ("SELECT COUNT(*) FROM T WHERE T.D = 3;", "cannot compare date with int", 34),
    ("SELECT COUNT(*) FROM T WHERE T.N IN (SELECT A FROM R);", "cannot compare string with int", 34),
    ("SELECT T.N + 1 FROM T;", "operator + needs numbers, got string", 8),
    ("SELECT COUNT(*) FROM T WHERE T.C LIKE 'a%';", "LIKE needs a string", 34),
    ("SELECT CASE WHEN A > 1 THEN 'x' ELSE 2 END FROM R;", "CASE branches have incompatible types", 8),
    ("SELECT CASE WHEN C > 1 THEN N END FROM T;", "CASE without ELSE", 8),
    ("SELECT R.B, SUM(R.A) FROM R;", "must appear in GROUP BY", 8),
    ("SELECT B, SUM(A) FROM R GROUP BY B HAVING A > 1;", "column A must appear in GROUP BY", 43),
    ("SELECT COUNT(*) FROM R WHERE SUM(A) > 1;", "aggregate SUM is not allowed in WHERE", 30),
    ("SELECT COUNT(*) FROM R GROUP BY SUM(A);", "aggregate SUM is not allowed in GROUP BY", 33),
    ("SELECT SUM(COUNT(*)) FROM R;", "nested aggregate COUNT inside SUM", 12),
    ("SELECT COUNT(*) FROM R WHERE A = (SELECT SUM(B), SUM(C) FROM S);", "exactly one column, not 2", 35),
    ("SELECT COUNT(*) FROM R WHERE A IN (SELECT B, C FROM S);", "subquery of IN must have exactly one column", 36),
    ("SELECT COUNT(*) FROM R WHERE A > ALL (SELECT * FROM S);", "subquery of ALL must have exactly one column", 39),
    ("SELECT COUNT(*) FROM (SELECT A FROM R);", "a subquery in FROM needs an alias", 22),
    ("SELECT foo(A) FROM R;", "unknown function FOO", 8),
    ("SELECT listmax(A) FROM R;", "LISTMAX takes at least 2 argument(s), got 1", 8),
    ("SELECT substring(N, 1) FROM T;", "SUBSTRING takes 3 argument(s), got 2", 8),
    ("SELECT date_part('week', D) FROM T;", "date_part needs 'year', 'month' or 'day'", 18),
    ("SELECT SUM(A, B) FROM R;", "SUM takes one argument", 8),
    ("SELECT A FROM R UNION SELECT A, B FROM R;", "UNION of queries with 1 and 2 columns", 1),
    ("SELECT N FROM T INTERSECT SELECT C FROM T;", "INTERSECT column 1: cannot combine string with int", 1),
    ("SELECT A, SUM(B) FROM R GROUP BY A ORDER BY B;", "ORDER BY must name a result column", 45),
    ("SELECT * WHERE 1 = 1;", "SELECT * without FROM", 8),
    ("SELECT COUNT(*) FROM R WHERE R.A > DATE('2020-13-01');", "bad date", 41),
    ("SELECT COUNT(*) FROM R GROUP BY 3;", "GROUP BY position 3 is not in the select list", 33),
    ("SELECT A FROM R UNION SELECT B FROM S ORDER BY A + 1;", "ORDER BY of a UNION must name one of its result columns", 50),
])
def test_semantic_errors_have_positions(sql, message, column):
    e = _error(sql, SemanticError)
    assert message in e.message
    assert (e.file, e.line, e.column) == ("q.sql", L, column)
    assert "\n" not in str(e) and str(e).startswith(f"q.sql:{L}:{column}: ")


@pytest.mark.parametrize("sql, what, column", [
    ("SELECT SUBSTRING(NULL, 1, 2) FROM R;", "NULL as an argument of SUBSTRING", 18),
    ("SELECT A + INTERVAL '1' DAY FROM R;", "INTERVAL arithmetic", 10),
    ("SELECT INTERVAL '1' DAY FROM R;", "INTERVAL outside", 8),
    ("SELECT COUNT(*) FROM (SELECT A FROM R LIMIT 2) q;", "LIMIT in a subquery", 23),
    ("SELECT A FROM R LIMIT 2 UNION SELECT B FROM S;", "LIMIT without ORDER BY on an operand of UNION", 1),
    ("(SELECT A FROM R) UNION ALL (SELECT B FROM S LIMIT 2);", "LIMIT without ORDER BY on an operand of UNION ALL", 30),
    ("SELECT COUNT(*) FROM (SELECT A FROM R UNION SELECT B FROM S ORDER BY 1 LIMIT 2) q;",
     "LIMIT on a UNION in a subquery", 23),
    ("SELECT COUNT(*) FROM (SELECT A FROM R ORDER BY A LIMIT 2 UNION SELECT B FROM S) q;",
     "LIMIT on an operand of UNION inside a subquery", 23),
    ("(SELECT SUM(A) FROM R GROUP BY B ORDER BY B LIMIT 2) EXCEPT (SELECT B FROM S);",
     "must name one of its result columns", 43),
])
def test_unsupported_constructs_are_named(sql, what, column):
    e = _error(sql, UnsupportedError)
    assert what in e.message
    assert (e.line, e.column) == (L, column)


@pytest.mark.parametrize("sql, what", [
    ("SELECT SUM(R.A) + (SELECT SUM(S.C) FROM S) FROM R;", "can be empty in a sum"),
])
def test_empty_scalar_subqueries_are_refused_where_results_cannot_hold_null(sql, what):
    """Issue 12: an empty SUM/MIN/... subquery is NULL; where toaster cannot represent NULL yet
    it refuses by name instead of reporting 0."""
    from toaster.pipeline import compile_sql
    with pytest.raises(UnsupportedError, match=what):
        compile_sql(SCHEMA + sql).stage("calc")


def test_literals_are_exact_decimals_folded_once():
    """Issue 12: `0.06 + 0.01` is 0.07 (not 0.06999999999999999), in toaster and in the oracle SQL."""
    from decimal import Decimal
    from toaster.frontend.constants import folded
    from toaster.frontend.printer import print_expr
    (lit,) = nodes(one("SELECT COUNT(*) FROM R WHERE R.A > 0.06;").select, A.Literal)[-1:]
    assert lit.value == Decimal("0.06") and lit.type == FLOAT
    q = one("SELECT COUNT(*) FROM R WHERE R.A > 0.06 + 0.01 AND R.B < (0.7 + 0.1) * 5 AND R.A <> 1 / 3;")
    sums = [c.right for c in q.select.where.args]
    assert [folded(e) for e in sums] == [(0.07, FLOAT), (4.0, FLOAT), (1 / 3, FLOAT)]
    assert print_expr(sums[0], "duckdb") == "0.06 + 0.01"      # DuckDB folds the DECIMALs itself


def test_syntax_error_position():
    with pytest.raises(SqlSyntaxError) as info:
        parse_sql(SCHEMA + "SELECT SUM(R.A) FROM R WHERE (R.A = 1", "q.sql")
    e = info.value
    assert e.line == L and e.column is not None
    assert str(e).startswith(f"q.sql:{L}:")


def test_pipeline_reports_frontend_errors_with_file():
    from toaster.pipeline import compile_sql
    with pytest.raises(SemanticError) as info:
        compile_sql(SCHEMA + "SELECT SUM(Z) FROM R;", source_file="q.sql")
    assert str(info.value).startswith(f"q.sql:{L}:12: ")


@pytest.mark.parametrize("sql", [
    "SELECT A FROM R UNION ALL SELECT B FROM S ORDER BY A DESC LIMIT 2;",      # after the last operand
    "(SELECT A FROM R) UNION ALL (SELECT B FROM S) ORDER BY 1 DESC LIMIT 2;",  # after parentheses
    "SELECT A FROM R UNION ALL SELECT B FROM S ORDER BY S.B DESC LIMIT 2;",    # the column the last operand selects
])
def test_order_by_limit_after_a_set_operation_apply_to_the_whole_of_it(sql):
    """As DuckDB parses them; the operands keep no ORDER BY / LIMIT of their own."""
    (q,) = resolve(sql)
    sel = q.select
    assert isinstance(sel, A.SetOp) and sel.limit == 2
    assert [(o.expr.name, o.descending) for o in sel.order_by] == [("A", True)]
    assert sel.right.limit is None and not sel.right.order_by
