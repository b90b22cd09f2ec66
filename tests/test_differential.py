"""Differential tests: every skeleton query on every backend and mode agrees with DuckDB.

The first half runs tests/queries/skeleton/*.sql through toaster.pipeline.compile_sql; the second
half tests the harness itself (generator, strategies, oracle, comparison, failure reports) with a
hand-written incremental engine, so a broken harness cannot pass silently.
"""
from __future__ import annotations

import datetime
import math
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from toaster.engine import Engine, ResultTable
from toaster.runtime.batch import Batch
from toaster.schema import Column, QueryResult, RelationDecl, ResultColumn
from toaster.runtime.csv_source import load_sources
from toaster.testing import (Oracle, check_compilation, compare_results, merge_batches, random_stream,
                             run_differential, split_batches)
from toaster.testing.strategies import database_batches, update_streams
from toaster.types import DATE, FLOAT, INT, STRING

REPO = Path(__file__).resolve().parent.parent
SKELETON = REPO / "tests" / "queries" / "skeleton"
QUERY_FILES = sorted(SKELETON.glob("*.sql"))
BACKENDS = ["interp", "llvm", "spark"]
STREAMS = ["insert-only", "insert+delete"]
MODES = ["tuple", "batch"]


def _stream_for(backend: str, stream: str, seed: int):
    deletes = stream == "insert+delete"
    if backend == "spark":   # every Spark job costs ~0.1-1 s: few, larger batches
        return lambda rels: random_stream(rels, seed=seed, deletes=deletes, n_batches=6,
                                          min_batch=4, max_batch=12)
    return lambda rels: random_stream(rels, seed=seed, deletes=deletes, n_batches=30, max_batch=6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("query", QUERY_FILES, ids=lambda p: p.stem)
def test_skeleton_query(query, backend, stream, mode, request):
    if backend == "spark":
        request.getfixturevalue("spark")      # the one shared session
    seed = sum(map(ord, query.stem)) + (7 if stream == "insert+delete" else 0)
    report = run_differential(query.read_text(), backend, _stream_for(backend, stream, seed), mode=mode)
    assert report.checks >= 1
    assert report.nonempty_checks >= 1, "the stream never produced a nonempty result: the test is vacuous"


_COMPILED: dict = {}


def _compiled(query: Path, mode: str):
    """Compile once per (query, mode) so property tests only pay for fresh engines."""
    from toaster.pipeline import compile_sql
    key = (query, mode)
    if key not in _COMPILED:
        _COMPILED[key] = compile_sql(query.read_text(), mode=mode)
    return _COMPILED[key]


PROPERTY_QUERIES = [SKELETON / f"{n}.sql" for n in ("rst_sum", "selfjoin_count", "join_group", "float_date")]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("query", PROPERTY_QUERIES, ids=lambda p: p.stem)
@settings(max_examples=max(5, settings().max_examples // 3))
@given(data=st.data())
def test_skeleton_query_property(query, backend, data):
    """Hypothesis-drawn insert/delete streams (shrunk to a minimal failing stream on error)."""
    mode = data.draw(st.sampled_from(MODES), label="mode")
    check_compilation(_compiled(query, mode), backend,
                      lambda rels: data.draw(update_streams(rels, deletes=True), label="stream"), mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_example_rst_from_files(backend, mode, request):
    """examples/rst.sql with its CSV files (one stream with deletions), read through csv_source."""
    if backend == "spark":
        request.getfixturevalue("spark")

    def feed(relations):
        tables, streams = load_sources(relations, batch_size=6, base_dir=str(REPO))
        return tables + streams
    report = run_differential((REPO / "examples" / "rst.sql").read_text(), backend, feed, mode=mode)
    assert report.nonempty_checks >= 1


# ============================================================== harness self-tests (no pipeline)
R = RelationDecl("R", (Column("A", INT), Column("B", INT)), "stream")
N = RelationDecl("N", (Column("K", INT), Column("W", INT)), "table")
Q = QueryResult("QUERY_1", (ResultColumn("B", INT),), (ResultColumn("TOTAL", INT),), ("QUERY_1_TOTAL",))
GROUP_SUM_ORACLE = "SELECT B, SUM(A) FROM R GROUP BY B"


class GroupSumEngine(Engine):
    """Hand-written IVM of SELECT B, SUM(A) AS total FROM R GROUP BY B; `bug` breaks it on purpose."""
    backend = "stub"

    def __init__(self, bug: str | None = None):
        super().__init__([R], [Q])
        self.bug = bug
        self.total: dict = {}

    def _apply(self, batch):
        for sign, (a, b) in batch.rows():
            if self.bug == "ignore-deletes" and sign < 0:
                continue
            k = (b if self.bug != "wrong-key" else b + 100,)
            self.total[k] = self.total.get(k, 0) + sign * a

    def read_map(self, name):
        return {k: v for k, v in self.total.items() if v != 0}


def stub_compile(bug=None, oracle_sql=(GROUP_SUM_ORACLE,)):
    def compile_sql(sql_text, mode="tuple"):
        return SimpleNamespace(queries=(Q,), oracle_sql=oracle_sql, engine=lambda backend: GroupSumEngine(bug))
    return compile_sql


@pytest.mark.parametrize("deletes", [False, True])
def test_harness_accepts_correct_engine(deletes):
    stream = random_stream([R], seed=3, deletes=deletes, n_batches=25)
    report = run_differential("<stub>", "stub", stream, compile=stub_compile())
    assert report.checks == 25 and report.nonempty_checks >= 20 and report.rows_checked > 0


@pytest.mark.parametrize("bug", ["ignore-deletes", "wrong-key"])
def test_harness_reports_wrong_engine(bug):
    stream = random_stream([R], seed=3, deletes=True, n_batches=25)
    with pytest.raises(AssertionError) as info:
        run_differential("<stub>", "stub", stream, compile=stub_compile(bug))
    msg = str(info.value)
    assert "QUERY_1" in msg and "after batch" in msg and "key (" in msg and GROUP_SUM_ORACLE in msg


def test_harness_reports_first_failing_batch():
    # the first batch holding a delete is where an engine ignoring deletes must be caught
    stream = random_stream([R], seed=11, deletes=True, n_batches=25)
    # (values are >= 0, so a deleted row with A > 0 changes its group's sum)
    first = next(i for i, b in enumerate(stream, 1) if any(s < 0 and a > 0 for s, (a, _) in b.rows()))
    with pytest.raises(AssertionError, match=f"after batch {first} "):
        run_differential("<stub>", "stub", stream, compile=stub_compile("ignore-deletes"))


def test_harness_check_every_and_final_check():
    stream = random_stream([R], seed=5, n_batches=10)
    report = run_differential("<stub>", "stub", stream, compile=stub_compile(), check_every=4)
    assert report.checks == 3          # after batches 4, 8 and the last one (10)


def test_harness_callable_stream_and_query_count_mismatch():
    report = run_differential("<stub>", "stub", lambda rels: random_stream(rels, seed=1, n_batches=3),
                              compile=stub_compile())
    assert report.batches == 3
    with pytest.raises(AssertionError, match="oracle queries"):
        run_differential("<stub>", "stub", [], compile=stub_compile(oracle_sql=()))


@given(update_streams([R], deletes=True))
def test_harness_on_hypothesis_streams(stream):
    run_differential("<stub>", "stub", stream, compile=stub_compile())


# ----------------------------------------------------------------------- generator and strategies
def _assert_valid_stream(relations, stream):
    """Tables come first and insert-only; no prefix of the stream deletes an absent tuple."""
    kinds = {d.name: d.kind for d in relations}
    seen_stream = False
    held = {d.name: Counter() for d in relations}
    for b in stream:
        if kinds[b.relation] == "table":
            assert not seen_stream and (b.signs > 0).all()
        else:
            seen_stream = True
        for sign, row in b.rows():
            held[b.relation][row] += sign
            assert held[b.relation][row] >= 0, (b.relation, row)


def test_random_stream_is_deterministic_and_valid():
    a = random_stream([N, R], seed=42, deletes=True)
    b = random_stream([N, R], seed=42, deletes=True)
    assert [(x.relation, list(x.rows())) for x in a] == [(y.relation, list(y.rows())) for y in b]
    assert any((x.signs < 0).any() for x in a)
    assert a[0].relation == "N"
    _assert_valid_stream([N, R], a)


@given(update_streams([N, R], deletes=True))
def test_update_streams_are_valid(stream):
    _assert_valid_stream([N, R], stream)


@given(database_batches([R, N]))
def test_database_batches_insert_only(batches):
    assert all((b.signs > 0).all() for b in batches)
    _assert_valid_stream([R, N], batches)


def test_split_and_merge_keep_rows():
    stream = random_stream([R], seed=9, deletes=True, n_batches=6)
    flat = [r for b in stream for r in b.rows()]
    singles = split_batches(stream, 1)
    assert all(len(b) == 1 for b in singles)
    assert [r for b in singles for r in b.rows()] == flat
    assert [r for b in merge_batches(singles, 1000) for r in b.rows()] == flat


# ------------------------------------------------------------------------------- oracle
def test_oracle_multiplicities_types_and_dates():
    rel = RelationDecl("O", (Column("ID", INT), Column("P", FLOAT), Column("D", DATE), Column("S", STRING)), "stream")
    stream = random_stream([rel], seed=2, deletes=True, n_batches=15)
    oracle = Oracle([rel])
    held = Counter()
    for b in stream:
        oracle.apply(b)
        for sign, row in b.rows():
            held[row] += sign
    got = Counter(oracle.query('SELECT ID, P, D, S FROM O'))
    assert got == +held
    assert all(isinstance(r[2], int) for r in got)        # dates come back as YYYYMMDD ints
    cutoff = 19950101
    expected = sum(c for row, c in held.items() if row[2] < cutoff)
    assert oracle.query("SELECT COUNT(*) FROM O WHERE D < DATE '1995-01-01'") == [(expected,)]


def test_oracle_rejects_negative_multiplicity():
    oracle = Oracle([R])
    oracle.apply(Batch.from_rows("R", R.types, [(1, 2)], [-1]))
    with pytest.raises(AssertionError, match="negative"):
        oracle.query("SELECT * FROM R")


# --------------------------------------------------------------------------- compare_results
def _table(rows, types=(INT, INT), columns=("B", "TOTAL"), key_columns=1):
    return ResultTable("QUERY_1", columns, types, key_columns, tuple(rows))


def test_compare_missing_key_equals_zero_and_zero_rows_ignored():
    assert compare_results(_table([(1, 5)]), [(1, 5), (2, 0)], 1) == []
    assert compare_results(_table([(1, 5), (3, 0)]), [(1, 5)], 1) == []
    diffs = compare_results(_table([(1, 5)]), [(1, 5), (2, 7)], 1)
    assert [(d.key, d.engine, d.oracle) for d in diffs] == [((2,), None, (7,))]


def test_compare_float_tolerance_nan_and_none():
    t = _table([(1, 1.0)], types=(INT, FLOAT))
    assert compare_results(t, [(1, 1.0 + 1e-9)], 1) == []
    assert compare_results(t, [(1, 1.0 + 1e-4)], 1) != []
    assert compare_results(_table([(1, 1e-12)], types=(INT, FLOAT)), [], 1) == []
    assert compare_results(_table([(1, math.nan)], types=(INT, FLOAT)), [(1, math.nan)], 1) == []
    assert compare_results(_table([], types=(FLOAT,), columns=("X",), key_columns=0), [(None,)], 0) == []


def test_compare_date_keys_and_duplicates():
    t = _table([(19950101, 3)], types=(DATE, INT), columns=("D", "N"))
    assert compare_results(t, [(datetime.date(1995, 1, 1), 3)], 1) == []
    assert compare_results(t, [(datetime.date(1995, 1, 2), 3)], 1) != []
    with pytest.raises(AssertionError, match="twice"):
        compare_results(t, [(19950101, 1), (19950101, 2)], 1)
    with pytest.raises(AssertionError, match="columns"):
        compare_results(t, [(19950101,)], 1)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-3, 3)), max_size=12))
def test_compare_agrees_with_dict_equality(pairs):
    engine_rows, oracle_rows = {}, {}
    for i, (k, v) in enumerate(pairs):
        side = engine_rows if i % 2 else oracle_rows
        side[k] = v
    same = {k: v for k, v in engine_rows.items() if v} == {k: v for k, v in oracle_rows.items() if v}
    diffs = compare_results(_table(sorted(engine_rows.items())), list(oracle_rows.items()), 1)
    assert (diffs == []) == same
