"""Infinities and NaN as DuckDB means them (pass nonfinite_sums, toaster/frontend/nonfinite.py):
sums that can be non-finite split into retractable parts, NaN ordered as DuckDB orders it, and
the inputs no incremental sum could take back refused whole."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from toaster.errors import InputError, UnsupportedError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing.differential import run_differential
from toaster.testing.generator import random_stream
from toaster.testing.oracle import Oracle
from toaster.types import FLOAT, INT

CI = os.environ.get("CI") == "true"
ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "CREATE STREAM R(A int, B float, C float) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
INF = math.inf


def _b(rows, signs=None):
    return Batch.from_rows("R", (INT, FLOAT, FLOAT), rows, signs)


# 0/0, x/0 of both signs, infinities of C (read only by MIN/MAX and comparisons), then each
# deleted again: a sum that kept an infinity would be nan after the deletions
STREAM = [_b([(0, 1.0, 0.0), (0, 0.0, 0.0), (1, 3.0, 1.0), (0, -1.0, 2.0), (2, 0.0, INF)]),
          _b([(0, 1.0, 0.0)], [-1]),
          _b([(0, 0.0, 0.0)], [-1]),
          _b([(0, -1.0, 2.0), (2, 0.0, INF)], [-1, -1]),
          _b([(0, 5.0, -INF), (2, 0.0, 1.0), (0, 0.0, 0.0), (1, -2.0, 3.0)])]

QUERIES = {
    "sum": "SELECT A, SUM(B / A) AS s FROM R GROUP BY A",
    "sum_whole": "SELECT SUM(B / A) AS s, COUNT(*) AS n FROM R",
    "avg": "SELECT A, AVG(B / A) AS a FROM R GROUP BY A",
    "sum_functions": "SELECT A, SUM(ln(B)) AS l, SUM(sqrt(B)) AS q, SUM(B) AS s FROM R GROUP BY A",
    "sum_in_expression": "SELECT A, SUM(B / A) * 2 + COUNT(*) AS x FROM R GROUP BY A",
    "having": "SELECT A, COUNT(*) AS n FROM R GROUP BY A HAVING SUM(B / A) > 1",
    "min_max": "SELECT A, MAX(B / A) AS mx, MIN(B / A) AS mn FROM R GROUP BY A",
    "where": "SELECT A, COUNT(*) AS n FROM R WHERE B / A > 1.0 GROUP BY A",
    "where_equal": "SELECT A, COUNT(*) AS n FROM R WHERE B / A = B / A GROUP BY A",
    "infinite_inputs": "SELECT A, COUNT(*) AS n, MAX(C) AS m, MIN(C) AS k FROM R WHERE C >= 0 GROUP BY A",
    "case": "SELECT A, SUM(CASE WHEN B / A < 2 THEN 1 ELSE 0 END) AS x FROM R GROUP BY A",
    "group_by_nan": "SELECT B / A AS k, COUNT(*) AS n FROM R GROUP BY B / A",
    # 0/0 and acos(3) are NaNs with different bits (sign): one group, as in DuckDB
    "group_by_nans_of_two_kinds": "SELECT X.K, COUNT(*) AS n FROM (SELECT B / A AS K FROM R "
                                  "UNION ALL SELECT acos(B + 3.0) AS K FROM R) X GROUP BY X.K",
}


@pytest.mark.parametrize("mode", ["tuple", "batch"])
@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_nonfinite_values_equal_duckdb_after_every_batch(name, backend, mode):
    report = run_differential(SCHEMA + QUERIES[name] + ";", backend, STREAM, mode=mode)
    assert report.nonempty_checks >= 3        # not vacuous: rows after most batches


@pytest.mark.parametrize("backend", ["calc", "k3", "imp"])
def test_nonfinite_on_the_other_engines(backend):
    for name in ("sum", "min_max", "where", "having"):
        run_differential(SCHEMA + QUERIES[name] + ";", backend, STREAM, mode="batch")


def test_nonfinite_on_spark():
    sql = SCHEMA + QUERIES["sum"] + ";\n" + QUERIES["min_max"] + ";\n" + QUERIES["where"] + ";"
    run_differential(sql, "spark", STREAM, mode="batch")


def test_nan_only_from_an_infinite_input_refuses_the_infinity_and_keeps_the_plan():
    comp = compile_sql(SCHEMA + "SELECT A, COUNT(*) FROM R WHERE C - B > 1.0 GROUP BY A;")
    assert "total_lt" not in str(comp.stage("calc"))                  # the native comparison
    assert {c.name for c in comp.stage("sql").program.relations[0].columns if c.finite} == {"B", "C"}
    engine = comp.engine("interp")
    try:
        with pytest.raises(InputError, match="infinity"):
            engine.apply(_b([(1, 2.0, INF)]))
    finally:
        engine.close()
    axf = compile_sql(open(ROOT / "tests/queries/finance/axf.sql").read().replace(
        "INCLUDE 'tests/queries/finance/schema.sql';", open(ROOT / "tests/queries/finance/schema.sql").read()))
    assert "total_" not in str(axf.stage("calc"))                      # AXF's price differences


def test_split_is_what_the_sql_stage_shows():
    comp = compile_sql(SCHEMA + QUERIES["sum"] + ";")
    text = str(comp.stage("calc"))
    for part in ("finite_part", "is_posinf", "is_neginf", "is_nan"):
        assert f"#{part}" in text
    assert comp.stage("sql").notes == ("QUERY_1: SUM(R.B / R.A) can be infinite or NaN: kept as its finite part "
                                       "and counts of +inf, -inf and NaN",)      # --explain's decisions
    plain = compile_sql(SCHEMA + "SELECT A, SUM(B * 2) FROM R GROUP BY A;")
    assert "finite_part" not in str(plain.stage("calc"))       # finite inputs: one sum, as before
    assert {(c.name, c.finite) for c in plain.stage("sql").program.relations[0].columns} == \
        {("A", False), ("B", True), ("C", False)}
    assert plain.stage("sql").notes[-1].endswith("reach a sum that cannot take one back): R.B")


_DOMAINS = {"A": (0, 1, 2), "B": (-1.0, 0.0, 0.5, 2.0), "C": (0.0, 1.0, INF, -INF)}


@settings(max_examples=12 if CI else 40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), name=st.sampled_from(sorted(QUERIES)), backend=st.sampled_from(["interp", "llvm"]))
def test_generated_streams_with_zeros_and_infinities(seed, name, backend):
    stream = lambda rels: random_stream(rels, seed=seed, deletes=True, n_batches=8, max_batch=4, domains=_DOMAINS)
    run_differential(SCHEMA + QUERIES[name] + ";", backend, stream, mode="batch")


@pytest.mark.parametrize("sql,where", [
    ("SELECT A FROM R r WHERE r.B > (SELECT SUM(r2.B / r2.A) FROM R r2 WHERE r2.A = r.A)", (2, 39)),
    ("SELECT A, COUNT(*) FROM (SELECT A, MAX(B / A) AS m FROM R GROUP BY A) t WHERE t.m > 0 GROUP BY A", (2, 36)),
])
def test_nonfinite_aggregate_in_a_subquery_is_refused_by_name(sql, where):
    with pytest.raises(UnsupportedError) as e:
        compile_sql(SCHEMA + sql + ";")
    assert (e.value.line, e.value.column) == where
    assert "inside a subquery" in str(e.value)


@pytest.mark.parametrize("backend", ["interp", "llvm", "spark"])
def test_nan_and_summed_infinities_are_refused_whole(backend):
    comp = compile_sql(SCHEMA + "SELECT A, SUM(B) AS s, MAX(C) AS m FROM R GROUP BY A;", mode="batch")
    engine = comp.engine(backend)
    try:
        engine.apply(_b([(1, 2.0, 1.0)]))
        before = engine.results()[0].rows
        for bad in [(1, INF, 0.0), (1, -INF, 0.0), (1, math.nan, 0.0), (1, 1.0, math.nan)]:
            with pytest.raises(InputError, match=r"R\.[BC]: .* in row 2 of the batch"):
                engine.apply(_b([(1, 3.0, 2.0), bad]))
            assert engine.results()[0].rows == before
        engine.apply(_b([(1, 3.0, INF)]))             # C reaches only MAX: an infinity is exact there
        assert engine.results()[0].rows == ((1, 5.0, INF),)
    finally:
        engine.close()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_cli_names_file_line_and_column_of_a_refused_value(tmp_path, backend):
    (tmp_path / "r.csv").write_text("1,2.0,0.5\n1,inf,0.5\n2,3.5,0.5\n")
    (tmp_path / "q.sql").write_text(SCHEMA + "SELECT A, SUM(B) FROM R GROUP BY A;\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "toaster.pipeline", "q.sql", "--run", "--backend", backend],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "r.csv:2:3: bad input: R.B: 'inf': an infinity cannot be taken back" in r.stderr
    assert "Traceback" not in r.stderr


def test_oracle_keeps_nan_as_nan_and_deletes_it():
    rels = compile_sql(SCHEMA + "SELECT A, COUNT(*) FROM R GROUP BY A;").engine("interp").relations
    oracle = Oracle(list(rels.values()))
    try:
        oracle.apply(_b([(1, float("nan"), 0.0), (1, 2.0, 0.0)]))
        assert oracle.query("SELECT COUNT(*), COUNT(B), MAX(B) > 1e308 FROM R") == [(2, 2, True)]
        oracle.apply(_b([(1, np.float64("nan"), 0.0)], [-1]))      # another NaN object: the same row
        assert oracle.query("SELECT COUNT(*) FROM R") == [(1,)]
    finally:
        oracle.close()


def test_having_without_group_or_aggregate_is_refused():
    with pytest.raises(UnsupportedError, match="HAVING without GROUP BY"):
        compile_sql(SCHEMA + "SELECT 0 FROM R WHERE TRUE HAVING TRUE;")


def test_orderbook_reader_refuses_nan_and_summed_infinities():
    from toaster.runtime.orderbook import parse_orderbook_lines
    book = ("CREATE STREAM BIDS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) FROM FILE "
            "'ob.csv' LINE DELIMITED orderbook (book := 'bids', brokers := '10', deterministic := 'yes');\n")
    summed = compile_sql(book + "SELECT SUM(b.PRICE * b.VOLUME) FROM BIDS b;").stage("sql").program.relations[0]
    maxed = compile_sql(book + "SELECT MAX(b.PRICE) FROM BIDS b;").stage("sql").program.relations[0]
    lines = ["1,1,B,10,100.5", "2,2,B,5,inf"]
    with pytest.raises(InputError, match="infinity") as e:
        list(parse_orderbook_lines(summed, lines, path="ob.csv"))
    assert (e.value.line, e.value.column) == (2, 9)
    assert sum(len(b) for b in parse_orderbook_lines(maxed, lines, path="ob.csv")) == 2
    with pytest.raises(InputError, match="NaN is not supported"):
        list(parse_orderbook_lines(maxed, lines + ["3,3,B,nan,1.0"], path="ob.csv"))
