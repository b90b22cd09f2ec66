"""LLVM backend: bounded memory (maps reclaim zero entries, the string dictionary frees strings no
map key holds) and atomic batches (a batch that fails inside a trigger leaves every map as it was).
Results are checked against DuckDB (toaster.testing) on streams with many deletions."""
from __future__ import annotations

import random

import numpy as np
import pytest

from toaster.errors import InputError
from toaster.m3.batch_delta import is_delta_map_name
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import check_compilation, random_stream

GROUPED_SQL = """
    CREATE STREAM R(A int, B int); CREATE STREAM S(B int, C int);
    SELECT R.A, SUM(R.B) AS s FROM R GROUP BY R.A;
    SELECT R.A, S.C, COUNT(*) AS n FROM R, S WHERE R.B = S.B GROUP BY R.A, S.C;"""

STRING_SQL = """
    CREATE STREAM P(NAME string, K int);
    SELECT P.NAME, SUM(P.K) AS k FROM P GROUP BY P.NAME;
    SELECT SUBSTRING(P.NAME, 0, 3) AS s, COUNT(*) AS n FROM P GROUP BY SUBSTRING(P.NAME, 0, 3);
    SELECT P.K, COUNT(*) AS n FROM P WHERE P.NAME LIKE 'w1%' GROUP BY P.K;
    SELECT P.K, COUNT(*) AS n FROM P WHERE P.NAME >= 'w2' GROUP BY P.K;"""

CAST_SQL = """
    CREATE STREAM Q(NAME string, D string, K int);
    SELECT Q.NAME, SUM(Q.K) AS k FROM Q WHERE CAST_DATE(Q.D) < DATE('1996-01-01') GROUP BY Q.NAME;
    SELECT COUNT(*) AS n FROM Q;"""


def sliding_window(decl, make_row, n_events: int, window: int, batch: int, seed: int = 0):
    """Batches of `batch` updates: each event inserts a new row, and once `window` rows are active
    deletes the oldest one as well (half of the updates are deletions in the steady state)."""
    rng = random.Random(seed)
    active, rows, signs, out = [], [], [], []
    for i in range(n_events):
        row = make_row(i, rng)
        active.append(row)
        rows.append(row)
        signs.append(1)
        if len(active) > window:
            rows.append(active.pop(0))
            signs.append(-1)
        if len(rows) >= batch:
            out.append(Batch.from_rows(decl.name, decl.types, rows, signs))
            rows, signs = [], []
    if rows:
        out.append(Batch.from_rows(decl.name, decl.types, rows, signs))
    return out


def live_entries(engine):
    """Live entries of the views: the pre-aggregated batch maps of m3_batch_delta and the temp maps
    of a trigger hold the last batch, whatever it was (scratch bounded by the batch size)."""
    from toaster.m3.batch_delta import is_delta_map_name
    return {m.name: len(engine.read_map(m.name)) for m in engine.program.maps
            if m.kind == "view" and not is_delta_map_name(m.name, engine.relations)}


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_maps_shrink_back_to_their_live_entries(mode):
    comp = compile_sql(GROUPED_SQL, mode=mode)
    engine = comp.engine("llvm")
    R = engine.relations["R"]
    rows = [(a, a % 7) for a in range(3000)]
    engine.apply(Batch.from_rows("R", R.types, rows))
    grown = {m.name: engine.map_size(m.name) for m in engine.program.maps}
    assert max(grown.values()) >= 3000
    engine.apply(Batch.from_rows("R", R.types, rows[100:], signs=[-1] * 2900))   # most of them
    live = live_entries(engine)
    for name, n in live.items():
        assert engine.map_size(name) == n, name    # half or more were zero: compacted
    assert max(live.values()) == 100
    engine.apply(Batch.from_rows("R", R.types, rows[90:100], signs=[-1] * 10))  # a few: kept for now
    assert all(engine.map_size(m) <= 2 * max(n, 1) for m, n in live_entries(engine).items())
    engine.compact()
    live = live_entries(engine)
    assert all(engine.map_size(m) == n for m, n in live.items()) and max(live.values()) == 90
    engine.apply(Batch.from_rows("R", R.types, rows[:10]))    # reinserted after compaction
    assert engine.read_map(comp.queries[0].value_maps[0])[(5,)] == 10
    engine.close()


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_sliding_window_with_deletions_against_duckdb_in_bounded_maps(mode):
    comp = compile_sql(GROUPED_SQL, mode=mode)
    engine = comp.engine("llvm")

    def stream(rels):
        R, S = sorted(rels, key=lambda d: d.name)
        rs = sliding_window(R, lambda i, rng: (i, rng.randint(0, 20)), 1200, 50, 25 if mode == "batch" else 1, 1)
        ss = sliding_window(S, lambda i, rng: (rng.randint(0, 20), i % 13), 1200, 40, 25 if mode == "batch" else 1, 2)
        return [b for pair in zip(rs, ss) for b in pair]
    report = check_compilation(comp, "llvm", stream, mode=mode, check_every=97 if mode == "tuple" else 7)
    assert report.nonempty_checks >= 5
    for batch in stream(list(engine.relations.values())):
        engine.apply(batch)
    for m, n in live_entries(engine).items():
        assert engine.map_size(m) <= 2 * max(n, 8), m    # never more than twice the live entries
    engine.close()


@pytest.mark.parametrize("mode", ["tuple", "batch"])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_streams_with_many_deletions_against_duckdb(mode, seed):
    report = check_compilation(compile_sql(GROUPED_SQL, mode=mode), "llvm",
                               lambda rels: random_stream(rels, seed=seed, n_batches=60, deletes=True,
                                                          delete_fraction=0.5), mode=mode)
    assert report.nonempty_checks >= 10


def string_stream(rels, mode, n_events=3000, window=40):
    (P,) = rels
    return sliding_window(P, lambda i, rng: (f"w{rng.randint(0, 3)}{i:05d}{'é' * (i % 3)}", rng.randint(0, 3)),
                          n_events, window, 20 if mode == "batch" else 1, 3)


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_strings_no_key_holds_are_freed_and_their_ids_reused(mode, monkeypatch):
    monkeypatch.setattr("toaster.backends.llvm.strings.COLLECT_MIN", 100)
    comp = compile_sql(STRING_SQL, mode=mode)
    engine = comp.engine("llvm")
    pool = engine._pool
    for batch in string_stream(list(engine.relations.values()), mode):
        engine.apply(batch)
        # live strings: the window's names and their 3-character prefixes, the literals
        assert len(pool) <= max(100, 2 * 2 * 40 + 10) + 40
    assert pool.collections >= 5
    # 3000 distinct names and prefixes arrived; ids were reused, tables reallocated smaller
    assert len(pool.strings) <= 400
    assert all(len(t.values) <= 1024 for t in pool._tables) and len(pool._ranks.rank) <= 1024
    engine.compact()
    pool.collect(engine._string_keys())
    assert len(pool) <= 2 * 40 + pool.n_literals + 8
    engine.close()


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_results_stay_right_across_string_collections(mode, monkeypatch):
    monkeypatch.setattr("toaster.backends.llvm.strings.COLLECT_MIN", 50)
    comp = compile_sql(STRING_SQL, mode=mode)
    report = check_compilation(comp, "llvm", lambda rels: string_stream(rels, mode, n_events=1500),
                               mode=mode, check_every=37 if mode == "tuple" else 3)
    assert report.nonempty_checks >= 20


def snapshot(engine):
    """Every view map (temp maps and a batch's pre-aggregated DELTA_<R>_<k> maps are scratch space
    that triggers clear before use: a rejected batch need not restore them)."""
    return {m.name: engine.read_map(m.name) for m in engine.program.maps
            if m.kind == "view" and not is_delta_map_name(m.name, engine.relations)}


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_a_failing_trigger_leaves_every_view_exactly_as_before(mode):
    comp = compile_sql(CAST_SQL, mode=mode)
    native, interp = comp.engine("llvm"), comp.engine("interp")
    Q = native.relations["Q"]
    good = Batch.from_rows("Q", Q.types, [(f"n{i % 5}", "1995-03-04" if i % 2 else "1997-01-01", i)
                                          for i in range(40)])
    bad = Batch.from_rows("Q", Q.types, [("n1", "1995-05-05", 7), ("n9", "1995-06-06", 2), ("n1", "1995-05-05", -3),
                                         ("n2", "1995-13-45", 1), ("n3", "1995-01-01", 1)],
                          signs=[1, 1, -1, 1, 1])
    for e in (native, interp):
        e.apply(good)
    before = snapshot(native)
    with pytest.raises(InputError, match=r"cast_date\('1995-13-45'\) failed .*rejected, the views are unchanged"):
        native.apply(bad)
    assert snapshot(native) == before
    # a deletion of a row the batch had created, a float of the same key: all undone; go on
    tail = Batch.from_rows("Q", Q.types, [("n1", "1995-05-05", 7), ("n0", "1995-03-04", 0)], signs=[1, -1])
    for e in (native, interp):
        e.apply(tail)
    assert [r.rows for r in native.results()] == [r.rows for r in interp.results()]
    # single tuples too: the failing one is rejected, the others apply
    with pytest.raises(InputError):
        native.insert("Q", ("n4", "x", 1))
    assert [r.rows for r in native.results()] == [r.rows for r in interp.results()]
    native.close()


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_a_failing_batch_that_clears_a_view_map_restores_it(mode):
    # the `rep` strategy recomputes maps: its triggers clear view maps and fill them again
    comp = compile_sql("""CREATE STREAM Q(NAME string, D string, K int);
        SELECT Q.NAME, MAX(Q.K) AS m FROM Q WHERE CAST_DATE(Q.D) < DATE('1996-01-01') GROUP BY Q.NAME;""",
                       mode=mode, pass_options={"calc_to_m3": {"strategy": "rep"}})
    assert "clear(M);" in str(comp.stage("imp"))
    native, interp = comp.engine("llvm"), comp.engine("interp")
    Q = native.relations["Q"]
    first = Batch.from_rows("Q", Q.types, [(f"n{i % 3}", "1995-01-01", i) for i in range(12)])
    for e in (native, interp):
        e.apply(first)
    before = snapshot(native)
    assert before["M"]
    with pytest.raises(InputError):
        native.apply(Batch.from_rows("Q", Q.types, [("n0", "1995-01-01", 99), ("n1", "1995-02-01", 7),
                                                     ("n0", "1995-01-01", 9), ("n2", "bad", 7)], signs=[1, 1, -1, 1]))
    assert snapshot(native) == before
    last = Batch.from_rows("Q", Q.types, [("n0", "1995-01-01", 99), ("n1", "1995-01-01", 1)], signs=[1, -1])
    for e in (native, interp):
        e.apply(last)
    assert [r.rows for r in native.results()] == [r.rows for r in interp.results()]
    native.close()


def test_load_replaces_a_maps_contents():
    comp = compile_sql(GROUPED_SQL)
    engine = comp.engine("llvm")
    name = comp.queries[0].value_maps[0]
    engine.insert("R", (3, 9))
    engine.load_map(name, np.array([[1], [2]]), np.array([5, 6]))
    assert engine.read_map(name) == {(1,): 5, (2,): 6}     # what the map held before is gone
    engine.insert("R", (2, 4))
    assert engine.read_map(name) == {(1,): 5, (2,): 10}
    engine.close()


def test_entries_read_back_restore_into_a_fresh_engine():
    comp = compile_sql(STRING_SQL + "SELECT P.K, AVG(CAST_FLOAT(P.K)) AS a FROM P GROUP BY P.K;", mode="batch")
    first, second = comp.engine("llvm"), comp.engine("llvm")
    for batch in string_stream(list(first.relations.values()), "batch", n_events=300):
        first.apply(batch)
    for m in first.program.maps:
        second.set_entries(m.name, first.read_map(m.name))
    assert snapshot(second) == snapshot(first)
    more = Batch.from_rows("P", first.relations["P"].types, [("w2zz", 3), ("w1a", 1)])
    for e in (first, second):
        e.apply(more)
    assert [r.rows for r in second.results()] == [r.rows for r in first.results()]


def test_a_batchs_delta_maps_keep_no_undo_records():
    """DELTA_<R>_<k> maps are refilled by every batch before they are read, so their writes are not
    logged (the undo log records only what a rejected batch must restore)."""
    from toaster.backends.llvm.codegen import _ModuleGen
    comp = compile_sql(CAST_SQL, mode="batch")
    gen = _ModuleGen(comp.stage("imp"), with_undo=True)
    relations = [r.name for r in comp.stage("imp").relations]
    deltas = [name for name in gen.maps if is_delta_map_name(name, relations)]
    assert deltas and all(gen.maps[name].undo is None for name in deltas)
    assert any(m.undo is not None for name, m in gen.maps.items() if name not in deltas)
