"""The ordered aggregate indexes of `m3_range_index` (issue 12 item 6).

The index functions are checked against brute force on random maps; VWAP, MST and our own
range-correlated queries (< <= > >=, grouped and ungrouped, with deletions) against DuckDB after
every batch on interp and llvm, both with values >= 0 (the descents) and with negative values
(the O(n log U) fallback); and the program keeps its size: O(1) code per use site.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toaster.m3.parser import parse_m3
from toaster.ordered_index import (I64_MAX, I64_MIN, LEVELS, bound_code, rix_bound, rix_cut, rix_interval,
                                   rix_key, rix_node, rix_sum)
from toaster.pipeline import compile_file, compile_sql
from toaster.testing import run_differential
from toaster.testing.differential import check_maps_hold_definitions
from toaster.testing.generator import random_stream

FINANCE = "tests/queries/finance"
BATCH_INDEX = {"m3_range_index": {"batch": True}}
THRESHOLDS = {"m3_range_index": {"thresholds": True}}
CI = os.environ.get("CI") == "true"
# volumes >= 0 keep the nested sums monotone (the descents); the default domains have -1.5
NONNEG = {"VOLUME": (0.5, 1.25, 2.0, 3.75, 10.0), "PRICE": (-1.5, 0.5, 1.25, 2.0, 3.75, 10.0),
          "C": (0.5, 1.0, 2.25, 4.0), "D": (19940630, 19950101, 19960315), "A": (0, 1, 2, 3)}
# new keys for the second part of a mixed stream, so that their sums can go below 0
NEGATIVE = {**NONNEG, "VOLUME": (-1.5, 0.5, -2.0), "C": (-2.0, 0.5, -1.0), "PRICE": (5.0, 7.5, -3.0),
            "B": (6.0, -4.0), "D": (19970101, 19930101), "A": (5, -2, 2 ** 63 - 1, -2 ** 63)}


def mixed_stream(seed: int, n_batches: int, max_batch: int = 6):
    """Values >= 0 first (the descents), then rows at new keys with negative values too (the
    fallback): one engine sees both paths."""
    def make(rels):
        first = random_stream(rels, seed=seed, deletes=True, n_batches=n_batches // 2, max_batch=max_batch,
                              domains=NONNEG)
        return first + random_stream(rels, seed=seed + 1, deletes=True, n_batches=n_batches - n_batches // 2,
                                     max_batch=max_batch, delete_fraction=0.5, domains=NEGATIVE)
    return make


# ---------------------------------------------------------------- the functions themselves
def _index(entries: dict) -> dict:
    idx: dict = {}
    for y, v in entries.items():
        for level in range(LEVELS):
            key = (level, rix_node(rix_key(y), level))
            idx[key] = idx.get(key, 0) + v
    return idx


_KEYS = st.one_of(st.integers(-5, 5), st.sampled_from([I64_MIN, I64_MIN + 1, I64_MAX - 1, I64_MAX, 2 ** 40]))
_FLOAT_KEYS = st.sampled_from([-10.0, -1.5, -0.0, 0.0, 0.5, 2.0, 1e300, float("inf"), float("-inf")])


def test_key_orders_like_its_value():
    xs = [float("-inf"), -1e300, -2.0, -0.5, 0.0, 1e-300, 0.5, 3.0, 1e300, float("inf")]
    assert [rix_key(x) for x in xs] == sorted(rix_key(x) for x in xs)
    assert rix_key(-0.0) == rix_key(0.0)


@settings(max_examples=60 if CI else 150, deadline=None)
@given(entries=st.dictionaries(st.one_of(_KEYS, _FLOAT_KEYS), st.integers(0, 4), max_size=8),
       probes=st.lists(st.one_of(_KEYS, _FLOAT_KEYS), min_size=1, max_size=4),
       a=st.integers(-1, 12))
def test_functions_equal_brute_force(entries, probes, a):
    keys = {rix_key(y): v for y, v in entries.items()}
    # one key type per index (ints and floats never share one)
    if len({type(y) for y in entries}) > 1:
        return
    maps = {"IDX": _index(entries)}
    for p in probes:
        x = rix_key(p)
        for lo in (x, I64_MIN):
            for hi in (x, I64_MAX, x + 3 if x < I64_MAX - 3 else I64_MAX):
                assert rix_interval(maps, "IDX", lo, hi) == sum(v for k, v in keys.items() if lo <= k <= hi)
        for rel, op in enumerate((">", ">=", "<", "<=")):
            want = sum(v for k, v in keys.items() if _cmp(op, k, x))
            assert rix_sum(maps, "IDX", rel, x) == want
    # the descents against a scan of every candidate boundary (values >= 0: monotone sums)
    candidates = sorted({I64_MIN, I64_MAX} | {k + d for k in keys for d in (-1, 0, 1) if I64_MIN <= k + d <= I64_MAX})
    for rel, op in enumerate((">", ">=", "<", "<=")):
        for strict in (True, False):
            def s(x):
                return sum(v for k, v in keys.items() if _cmp(op, k, x))
            ok = [x for x in candidates if (s(x) < a if strict else s(x) <= a)]
            got = rix_bound(maps, "IDX", bound_code(op, strict, 0), a)
            if rel <= 1:      # up-set: its least key
                assert got == (min(ok) if ok else I64_MAX)
            else:             # down-set: its greatest key
                assert got == (max(ok) if ok else I64_MIN)


@settings(max_examples=60 if CI else 150, deadline=None)
@given(a=st.one_of(_KEYS, _FLOAT_KEYS, st.just(float("nan"))), xs=st.lists(st.one_of(_KEYS, _FLOAT_KEYS), max_size=6))
def test_cut_is_the_end_of_the_keys_in_range(a, xs):
    """rix_cut(rel, a): every key x of a's type with x REL a lies on the right side of the cut."""
    xs = [x for x in xs if type(x) is type(a)]
    for rel, op in enumerate((">", ">=", "<", "<=")):
        cut = rix_cut(rel, a)
        for x in xs:
            inside = cut <= rix_key(x) if rel <= 1 else rix_key(x) <= cut
            assert inside == _cmp(op, x, a) or (rix_key(x) in (I64_MIN, I64_MAX) and not isinstance(x, float))


def _cmp(op, k, x):
    return {">": k > x, ">=": k >= x, "<": k < x, "<=": k <= x}[op]


# ---------------------------------------------------------------- the pass on the finance queries
@pytest.mark.parametrize("query,indexes", [("vwap", 3), ("mst", 7)])
def test_finance_queries_get_indexes(query, indexes):
    comp = compile_file(f"{FINANCE}/{query}.sql")
    names = [m.name for m in comp.m3.maps]
    assert len([n for n in names if n.endswith("_rix")]) == indexes
    assert not [n for n in names if "_cache" in n]          # m3_view_cache found nothing left to do
    reeval = [s for t in comp.m3.triggers for s in t.statements if s.op == ":=" and t.event.kind != "ready"]
    assert reeval and all("rix_interval" in str(s.rhs) and "rix_bound" in str(s.rhs) for s in reeval)
    assert any("ordered index" in n for n in comp.m3.notes)
    text = str(comp.m3)
    assert str(parse_m3(text)) == text


@pytest.mark.parametrize("backend,query", [("interp", "mst"), ("llvm", "vwap")])
def test_index_maps_hold_their_definitions(backend, query):
    """Indexes, negative-entry counts, group counts and RIX_LEVELS equal their calculus definitions
    after a stream with deletions (so --explain and checkpoints show what they mean)."""
    comp = compile_file(f"{FINANCE}/{query}.sql")
    added = {m.name for m in comp.m3.maps if m.name.endswith(("_rix", "_neg", "_rixg")) or m.name == "RIX_LEVELS"}
    stream = random_stream(list(comp.m3.relations), seed=5, deletes=True, n_batches=12, max_batch=6)
    assert check_maps_hold_definitions(comp, backend, stream, added) > 0


def test_bounds_are_computed_once_per_statement():
    """MST's two product terms read the same four descents: each is computed once, at the top."""
    comp = compile_file(f"{FINANCE}/mst.sql")
    for t in comp.m3.triggers:
        for s in t.statements:
            if s.op == ":=" and t.event.kind != "ready":
                assert str(s.rhs).count("rix_bound") == 4


def test_uncovered_shapes_are_explained():
    """PSP's key thresholds are indexed only by the option (a loop over few distinct keys was
    faster); AXF's inequality join stays a loop per event: the notes say so."""
    psp = compile_file(f"{FINANCE}/psp.sql")
    assert not any(m.name.endswith("_rix") for m in psp.m3.maps)
    assert any("thresholds on its key" in n for n in psp.m3.notes)
    assert any(m.name.endswith("_rix") for m in compile_file(f"{FINANCE}/psp.sql", pass_options=THRESHOLDS).m3.maps)
    axf = compile_file(f"{FINANCE}/axf.sql")
    assert not any(m.name.endswith("_rix") for m in axf.m3.maps)
    assert any("inequality join" in n for n in axf.m3.notes)


def _thresholds(text, mode="tuple"):
    return compile_sql(text, mode=mode, pass_options=THRESHOLDS)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_psp_thresholds_match_duckdb(backend):
    with open(f"{FINANCE}/psp.sql") as f:
        sql = f.read()
    assert run_differential(sql, backend, mixed_stream(6, 16), compile=_thresholds).checks == 16


def test_batch_mode_only_by_option_and_skipping_leaves_none():
    assert not any(m.name.endswith("_rix") for m in compile_file(f"{FINANCE}/vwap.sql", mode="batch").m3.maps)
    assert any(m.name.endswith("_rix") for m in compile_file(f"{FINANCE}/vwap.sql", mode="batch",
                                                             pass_options=BATCH_INDEX).m3.maps)
    comp = compile_file(f"{FINANCE}/vwap.sql", skip=("m3_range_index",))
    assert not any(m.name.endswith("_rix") for m in comp.m3.maps)
    assert any("_cache" in m.name for m in comp.m3.maps)


def test_program_size_is_constant_per_site(monkeypatch):
    """Structural: one loop function per index map, one call per use site (the unrolled form of
    an earlier attempt was 2.8 MB of LLVM IR for VWAP); the dense arrays (range_dense.py) add a
    few functions per index, not per site."""
    with_index = str(compile_file(f"{FINANCE}/vwap.sql").stage("llvm"))
    without = str(compile_file(f"{FINANCE}/vwap.sql", skip=("m3_range_index",)).stage("llvm"))
    monkeypatch.setenv("TOASTER_RIX_DENSE", "off")
    hashed = str(compile_file(f"{FINANCE}/vwap.sql").stage("llvm"))
    assert len(hashed) < 2 * len(without)
    assert len(with_index) - len(hashed) < 15_000 * 3          # VWAP: three indexes
    assert with_index.count("define internal double @\"rix.bound.") + \
        with_index.count("define internal i64 @\"rix.bound.") <= 2


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("query", ["vwap", "mst"])
def test_finance_matches_duckdb(backend, query):
    with open(f"{FINANCE}/{query}.sql") as f:
        sql = f.read()
    assert run_differential(sql, backend, mixed_stream(4, 30)).checks == 30


# prices of one binade, 1/64 apart: llvm's leaf level (toaster/backends/llvm/range_mask.py)
# moves down as close keys meet, and deletions free leaf nodes for other keys
CLOSE = {**NONNEG, "PRICE": tuple(100.0 + k / 64 for k in (0, 1, 2, 3, 5, 8, 13, 21, 34, 35, 40, 63)),
         "BROKER_ID": (1, 2, 3)}


@pytest.mark.parametrize("query", ["vwap", "mst"])
def test_close_keys_match_duckdb(query):
    with open(f"{FINANCE}/{query}.sql") as f:
        sql = f.read()
    stream = lambda rels: random_stream(rels, seed=9, deletes=True, n_batches=24, max_batch=4,  # noqa: E731
                                        domains=CLOSE)
    assert run_differential(sql, "llvm", stream).checks == 24


def _batch_index(text, mode="tuple"):
    return compile_sql(text, mode=mode, pass_options=BATCH_INDEX)


@pytest.mark.parametrize("backend,query", [("interp", "vwap"), ("interp", "mst"), ("llvm", "vwap")])
def test_batch_mode_matches_duckdb(backend, query):
    """Batch mode with indexes (the option `batch`; without, batch mode is m3_view_cache's)."""
    with open(f"{FINANCE}/{query}.sql") as f:
        sql = f.read()
    report = run_differential(sql, backend, mixed_stream(5, 12, max_batch=8), mode="batch", compile=_batch_index)
    assert report.checks == 12


# ---------------------------------------------------------------- our own range-correlated queries
SCHEMA = "CREATE STREAM R(A int, B float, C float, D date);\nCREATE STREAM S(A int, B float, C float, D date);\n"
TEMPLATES = [
    # ungrouped, another relation's sum, a constant threshold
    "SELECT SUM(r.C) FROM R r WHERE {k} {cmp} (SELECT SUM(s.C) FROM S s WHERE s.B {rng} r.B)",
    # grouped by a column of the outer relation, a count
    "SELECT r.A, SUM(r.C * r.B) FROM R r WHERE (SELECT COUNT(*) FROM S s WHERE s.B {rng} r.B) {cmp} {k} GROUP BY r.A",
    # self-correlated against a fraction of the total (VWAP's shape) over dates
    "SELECT r.A, COUNT(*) FROM R r WHERE 0.5 * (SELECT SUM(r3.C) FROM R r3) {cmp} "
    "(SELECT SUM(r2.C) FROM R r2 WHERE r2.D {rng} r.D) GROUP BY r.A",
    # int keys (bounds saturate at the int64 ends: the fallback while a key is there), grouped by a float
    "SELECT r.B, SUM(r.C) FROM R r WHERE (SELECT SUM(s.C) FROM S s WHERE s.A {rng} r.A) {cmp} {k} GROUP BY r.B",
]


# key thresholds (`X op a`, a free of X): alone (the option `thresholds`) and beside a range sum (always)
THRESHOLD_TEMPLATES = [
    "SELECT SUM(r.C) FROM R r WHERE r.B {cmp} 0.5 * (SELECT SUM(s.C) FROM S s)",
    "SELECT r.A, SUM(r.B) FROM R r WHERE r.C {cmp} (SELECT SUM(s.C) FROM S s) GROUP BY r.A",
    "SELECT r.B, COUNT(*) FROM R r WHERE r.A {cmp} (SELECT SUM(s.A) FROM S s) GROUP BY r.B",
    "SELECT SUM(r.C) FROM R r WHERE r.B {cmp} 0.5 * (SELECT SUM(s2.C) FROM S s2) "
    "AND (SELECT SUM(s.C) FROM S s WHERE s.B {rng} r.B) > 1",
]


@pytest.mark.parametrize("template,cmp,rng", [(0, ">", "<"), (1, "<=", "<"), (2, ">=", "<"), (3, "<", ">=")])
def test_key_thresholds_match_duckdb(template, cmp, rng):
    sql = SCHEMA + THRESHOLD_TEMPLATES[template].format(cmp=cmp, rng=rng) + ";"
    assert any(m.name.endswith("_rix") for m in _thresholds(sql).m3.maps)
    for backend in ("interp", "llvm"):
        assert run_differential(sql, backend, mixed_stream(8, 10, max_batch=5), compile=_thresholds).checks == 10
    if template == 3:               # beside a range sum: indexed without the option too
        assert any("rix_cut" in str(s.rhs) for t in compile_sql(sql).m3.triggers for s in t.statements)


def _sql(template: int, cmp: str, rng: str, k: str) -> str:
    return SCHEMA + TEMPLATES[template].format(cmp=cmp, rng=rng, k=k) + ";"


@pytest.mark.parametrize("template,cmp,rng", [(0, ">", "<"), (0, "<=", ">="), (1, ">=", ">"), (1, "<", "<="),
                                              (2, ">", ">"), (2, ">=", "<"), (3, "<", ">"), (3, ">=", "<=")])
def test_own_queries_get_indexes_and_match_duckdb(template, cmp, rng):
    sql = _sql(template, cmp, rng, "2")
    assert any(m.name.endswith("_rix") for m in compile_sql(sql).m3.maps)
    for backend in ("interp", "llvm"):
        assert run_differential(sql, backend, mixed_stream(7, 20, max_batch=5)).checks == 20


@settings(max_examples=5 if CI else 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.integers(0, len(TEMPLATES) - 1), cmp=st.sampled_from(["<", "<=", ">", ">="]),
       rng=st.sampled_from(["<", "<=", ">", ">="]), k=st.sampled_from(["0", "1", "2.5"]),
       seed=st.integers(0, 2 ** 16), nonneg=st.booleans(), backend=st.sampled_from(["interp", "llvm"]))
def test_range_queries_match_duckdb(template, cmp, rng, k, seed, nonneg, backend):
    run_differential(_sql(template, cmp, rng, k), backend, lambda rels: random_stream(
        rels, seed=seed, deletes=True, n_batches=10, max_batch=5, domains=NONNEG if nonneg else None))


# ---------------------------------------------------------------- a rejected batch (llvm)
ROLLBACK = {  # (schema and query, column types, indexes): float keys ungrouped; int keys by group
    "float": ("CREATE STREAM B(P float, V int) FROM FILE 'b.csv' LINE DELIMITED CSV;\n"
              "SELECT SUM(b.P * b.V) AS s FROM B b WHERE 0.25 * (SELECT SUM(b3.V) FROM B b3) > "
              "(SELECT SUM(b2.V) FROM B b2 WHERE b2.P > b.P);", 3),
    "grouped": ("CREATE STREAM B(P int, V int, G int) FROM FILE 'b.csv' LINE DELIMITED CSV;\n"
                "SELECT b.G, SUM(b.V) AS s FROM B b WHERE 0.25 * (SELECT SUM(b3.V) FROM B b3) > "
                "(SELECT SUM(b2.V) FROM B b2 WHERE b2.P > b.P) GROUP BY b.G;", 3),
}


@pytest.mark.parametrize("shape", sorted(ROLLBACK))
def test_rejected_batch_restores_the_indexes(shape):
    """llvm's indexes keep no undo records: a batch that overflows is rolled back and the indexes
    are rebuilt from their restored maps, so they equal those of an engine that never saw it, and
    later batches still equal DuckDB."""
    from toaster.errors import IntegerOverflowError
    from toaster.runtime.batch import Batch
    from toaster.testing import Oracle, compare_results
    from toaster.types import FLOAT, INT

    sql, n_indexes = ROLLBACK[shape]
    grouped = shape == "grouped"

    def rows(rs, signs=None):
        if grouped:     # integer prices, and a group per price
            return Batch.from_rows("B", (INT, INT, INT), [(int(4 * p), v, int(4 * p) % 3) for p, v in rs], signs)
        return Batch.from_rows("B", (FLOAT, INT), rs, signs)
    comp = compile_sql(sql, mode="tuple")
    indexes = [m.name for m in comp.m3.maps if m.name.endswith("_rix")]
    assert len(indexes) == n_indexes
    hit, fresh = comp.engine("llvm"), comp.engine("llvm")
    oracle = Oracle(list(hit.relations.values()))
    good = [rows([(1.5, 3), (2.25, 5), (0.5, 2), (3.0, 4)]), rows([(2.25, 5), (4.0, 1)], [-1, 1]),
            rows([(1.0, 6), (3.0, 2), (5.5, 3)])]
    try:
        for k, b in enumerate(good):
            if k == 1:      # new keys, then a sum past 2^63 - 1: nothing of it stays
                with pytest.raises(IntegerOverflowError):
                    hit.apply(rows([(7.0, 9), (0.25, 2 ** 62), (6.0, 4), (8.0, 2 ** 62), (9.0, 1)]))
            for e in (hit, fresh, oracle):
                e.apply(b)
            keys = len(comp.queries[0].key_columns)
            assert not compare_results(hit.result(comp.queries[0].name), oracle.query(comp.oracle_sql[0]), keys)
        for name in indexes:
            assert hit.read_map(name) == pytest.approx(fresh.read_map(name))
    finally:
        hit.close(), fresh.close(), oracle.close()


@pytest.mark.parametrize("query", ["fin_mst", "fin_psp", "fin_bxa"])
def test_order_book_runs_in_one_call_equal_event_by_event(tmp_path, query):
    """bench --in-memory --finance feeds the order book as ONE apply_many of its runs of
    consecutive same-relation events (BIDS and ASKS inserts and deletes interleave): the views
    equal those of one apply per event, and DuckDB's."""
    from bench.finance import generate_finance_stream
    from bench.harness import ExpectedResults, check_results, find_query, stream_relations
    from bench.in_memory_finance import stream_runs
    from bench.stream import load_event_stream
    si = generate_finance_stream(str(tmp_path / "book"), events=600, seed=3, brokers=3, book_size=40)
    es = load_event_stream(si.schema_sql())
    text = si.schema_sql() + "\n" + find_query(query).text
    rels, comp0 = stream_relations(text)
    rels &= set(es.stream_names)
    runs = stream_runs(es, rels)
    assert len(runs) > 10 and {b.relation for b in runs} == rels       # interleaved
    assert sum(map(len, runs)) == es.count(rels)
    comp = compile_sql(text, mode="tuple")
    whole, single = comp.engine("llvm"), comp.engine("llvm")
    try:
        whole.apply_many(runs)
        for group in es.batches(1, rels):
            for b in group:
                single.apply(b)
        expected = ExpectedResults(es, list(comp0.m3.relations), rels, tuple(comp0.oracle_sql))(es.count(rels))
        for e in (whole, single):
            assert check_results(e.results(), expected, list(comp.queries)) is None
        from toaster.testing import compare_results
        for q in comp.queries:
            assert not compare_results(whole.result(q.name), list(single.result(q.name).rows), len(q.key_columns))
    finally:
        whole.close(), single.close()


def test_masked_indexes_read_mid_stream_stay_right():
    """llvm keeps an ungrouped index's levels below its used bits only; reading a map's raw
    entries (read_map, checkpoints) first fills every level and the index stays full width:
    views equal DuckDB before and after, and the read index equals its calculus definition."""
    from toaster.testing import Oracle, compare_results
    from toaster.runtime.batch import Batch
    from toaster.types import FLOAT, INT
    comp = compile_file(f"{FINANCE}/vwap.sql")
    eng, fresh = comp.engine("llvm"), comp.engine("interp")
    oracle = Oracle(list(eng.relations.values()))
    rel = next(iter(eng.relations.values()))
    types = [c.type for c in rel.columns]
    indexes = [m.name for m in comp.m3.maps if m.name.endswith("_rix")]

    def rows(prices, sign=1):
        vals = [tuple((p if t == FLOAT else 1) if c.name.upper() == "PRICE" else
                      ((2.0 + k) if t == FLOAT else 2 + k) for c, t in zip(rel.columns, types))
                for k, p in enumerate(prices)]
        return Batch.from_rows(rel.name, tuple(types), vals, [sign] * len(vals))
    # keys 1.5 and 1.75 share a binade (few used bits); 300.0 and -2.0 widen the mask later
    stream = [rows([1.5, 1.75]), rows([1.5], -1), rows([300.0, 1.625]), rows([-2.0, 1.75]), rows([300.0], -1)]
    try:
        for k, b in enumerate(stream):
            for e in (eng, fresh, oracle):
                e.apply(b)
            if k == 1:
                for name in indexes:
                    assert eng.read_map(name) == pytest.approx(fresh.read_map(name))
            q = comp.queries[0]
            assert not compare_results(eng.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns))
        for name in indexes:
            assert eng.read_map(name) == pytest.approx(fresh.read_map(name))
    finally:
        eng.close(), fresh.close(), oracle.close()


@pytest.mark.parametrize("query", ["vwap", "mst"])
def test_every_index_level_loop_writes_one_index(query):
    """llvm masks an index (range_mask.py) only when each of its level loops writes that index
    alone: a pass that fuses two level loops would silently put back all 64 levels."""
    from toaster.imperative.ir import ForEach, MapAdd
    from toaster.m3.range_index import LEVELS_MAP
    imp = compile_file(f"{FINANCE}/{query}.sql").stage("imp")
    loops = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, ForEach) and s.map == LEVELS_MAP:
                loops.append(s)
            for child in ("body", "then", "orelse"):
                walk(getattr(s, child, ()) or ())
    for t in imp.triggers:
        walk(t.body)
    assert loops
    for loop in loops:
        assert len(loop.body) == 1 and isinstance(loop.body[0], MapAdd), loop
