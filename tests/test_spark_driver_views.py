"""The driver's views (`@ Local` maps) resident in the driver's JIT (native_driver.py): the local
blocks that read or write them run natively over the batch's columns, a failed step is undone by
the native undo log, and reads and checkpoints see them as any other view."""
from __future__ import annotations

from pathlib import Path

import pytest

from toaster.backends.spark import engine as spark_engine
from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_file, compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

Q22 = Path(__file__).parent / "queries" / "tpch" / "q22.sql"
# Q22's shape: S's trigger sums its batch into driver views (`N_mS1`, `N_mS2` @ Local), then
# Broadcasts the subquery's value (one row) to join the R view where it lies; R's trigger joins
# its batch with them
SCALAR = """CREATE STREAM R(A int, B int, NOTE string) FROM FILE 'r.csv' LINE DELIMITED csv;
CREATE STREAM S(B int, C int) FROM FILE 's.csv' LINE DELIMITED csv;
SELECT R.B, COUNT(*) AS N, SUM(R.A) AS TOTAL FROM R
WHERE R.A > (SELECT SUM(S.C) FROM S WHERE S.C > 3) GROUP BY R.B;"""


def _assert_equal(engine, comp, oracle, step) -> None:
    for q, sql_q in zip(comp.queries, comp.oracle_sql):
        assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), step


def _no_python_per_row(engine, prog, monkeypatch) -> tuple[list, list]:
    """(driver blocks' Python twins called with rows, relations made into row dicts), filled as
    the engine runs."""
    mod = engine.module
    python_calls, made_dicts = [], []
    for fn in prog.native.driver:      # the planner's dry run calls them on empty maps
        real = getattr(mod, fn)
        monkeypatch.setattr(mod, fn, lambda *a, _fn=fn, _real=real:
                            (any(len(m) for m in a) and python_calls.append(_fn), _real(*a))[1])
    real_net = spark_engine.net_delta
    monkeypatch.setattr(spark_engine, "net_delta", lambda b: (made_dicts.append(b.relation), real_net(b))[1])
    return python_calls, made_dicts


def _driver_views(engine) -> dict:
    return {v: engine.read_map(v) for v in engine.program.native.driver_views}


def test_q22_driver_views_and_blocks_run_natively(spark, tmp_path, monkeypatch):
    """TPC-H Q22: its 14 NUMCUST_mCUSTOMERn views live in the driver's JIT, all 3 local blocks are
    driver blocks, no batch becomes a row dict and no Python block runs on rows; DuckDB-equal
    after every step of inserts and deletes of both relations."""
    comp = compile_file(str(Q22), mode="batch")
    prog = comp.stage("spark")
    pp = prog.native
    assert len(pp.driver_views) == 14 and all(v.startswith("NUMCUST_mCUSTOMER") for v in pp.driver_views)
    assert set(pp.driver) == {c.name for c in prog.blocks if c.mode == "local"}
    assert pp.columnar == {"ORDERS", "CUSTOMER"} and pp.driver_python is None
    text = explain_jobs(prog)
    assert "driver views (@ Local): resident in the driver's JIT" in text and "Python functions" not in text
    # native_opt=0: Q22's driver program is 8.6 MB of IR, ~17 s to JIT at O1 (once per machine)
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=3, checkpoint_dir=str(tmp_path / "c"),
                         native_opt=0)
    python_calls, made_dicts = _no_python_per_row(engine, prog, monkeypatch)
    oracle = Oracle(comp.m3.relations)
    rels = [r for r in comp.m3.relations if r.name in ("CUSTOMER", "ORDERS")]
    # phone prefixes of Q22's country codes, so the driver views and the result are not empty
    domains = {"C_PHONE": ["13-555", "31-555", "23-555", "29-555", "30-555", "18-555", "17-555", "11-555"]}
    batches = random_stream(rels, seed=22, n_batches=6, min_batch=5, max_batch=40, deletes=True,
                            delete_fraction=0.3, domains=domains)
    try:
        assert not engine.program.local, "no driver view is a Python map"
        for i in range(0, len(batches), 2):
            engine.apply_many(batches[i:i + 2])
            for b in batches[i:i + 2]:
                oracle.apply(b)
            _assert_equal(engine, comp, oracle, i)
        assert any(_driver_views(engine).values())
    finally:
        engine.close()
        oracle.close()
    assert python_calls == [] and made_dicts == []


@pytest.fixture(scope="module")
def scalar():
    return compile_sql(SCALAR, mode="batch")


def test_overflow_in_a_later_block_and_a_failed_job_undo_the_driver_views(scalar, spark, tmp_path, monkeypatch):
    """S's first block rewrites the driver views; an integer overflow in its later block (a
    driver block summing a Gathered view), and in another step a failed job after that block,
    leave every view as before the step; the engine goes on DuckDB-equal."""
    prog = scalar.stage("spark")
    assert prog.native.driver_views == ("N_mS1", "N_mS2")
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_dir=str(tmp_path / "c"))
    python_calls, made_dicts = _no_python_per_row(engine, prog, monkeypatch)
    oracle = Oracle(scalar.m3.relations)
    R, S = engine.relations["R"].types, engine.relations["S"].types
    big = 2 ** 62
    steps = [
        # the subquery's sum exceeds every A: the two large A stay out of TOTAL (no overflow yet)
        [Batch.from_rows("S", S, [(1, big + 5), (2, 1)]),
         Batch.from_rows("R", R, [(big, 1, "x"), (big + 1, 1, "y"), (7, 2, "z")])],
        [Batch.from_rows("R", R, [(9, 2, "z"), (8, 3, "w")], signs=[1, 1])],
    ]
    failing = Batch.from_rows("S", S, [(1, big + 5), (3, 4)], signs=[-1, 1])    # sum 4: TOTAL[1] = 2^63 + 1
    try:
        for i, step in enumerate(steps):
            engine.apply_many(step)
            for b in step:
                oracle.apply(b)
            _assert_equal(engine, scalar, oracle, i)
        before, results = _driver_views(engine), engine.results()
        assert before == {"N_mS1": {(): 1}, "N_mS2": {(): big + 5}}
        with pytest.raises(IntegerOverflowError):
            engine.apply(failing)
        assert _driver_views(engine) == before and engine.results() == results
        # a job failing after S's first block ran: the step is undone as a whole
        real_job = type(engine.program)._run_job
        monkeypatch.setattr(type(engine.program), "_run_job",
                            lambda rt, more_follow: (_ for _ in ()).throw(RuntimeError("job lost")))
        harmless = Batch.from_rows("S", S, [(4, 6)])
        with pytest.raises(RuntimeError, match="job lost"):
            engine.apply(harmless)
        monkeypatch.setattr(type(engine.program), "_run_job", real_job)
        assert _driver_views(engine) == before and engine.results() == results
        # without one of the rows that overflowed (a step before), the same S batch applies
        for step in ([Batch.from_rows("R", R, [(big, 1, "x")], signs=[-1])], [failing, harmless]):
            engine.apply_many(step)
            for b in step:
                oracle.apply(b)
            _assert_equal(engine, scalar, oracle, "after")
        assert engine.results()[0].rows
        assert _driver_views(engine) == {"N_mS1": {(): 2}, "N_mS2": {(): 10}}
    finally:
        engine.close()
        oracle.close()
    assert python_calls == [] and made_dicts == []


def test_checkpoint_of_driver_views_crosses_to_interp_and_back(scalar, spark, tmp_path):
    """A spark checkpoint (driver views read from the driver's JIT) restores on interp, and
    interp's restores on a fresh spark engine (written into the JIT); both go on DuckDB-equal."""
    domains = {"R.A": [0, 3, 6, 20, 50], "S.C": [1, 2, 4, 5], "NOTE": ["a", "b"]}
    stream = random_stream(scalar.m3.relations, seed=7, n_batches=12, min_batch=1, max_batch=12,
                           deletes=True, delete_fraction=0.3, domains=domains)
    oracle = Oracle(scalar.m3.relations)
    engine = SparkEngine(scalar.stage("spark"), spark=spark, partitions=2, checkpoint_dir=str(tmp_path / "c"))
    interp = compile_sql(SCALAR).engine("interp")
    try:
        for b in stream[:6]:
            engine.apply(b)
            oracle.apply(b)
        engine.checkpoint(tmp_path / "from-spark")
        interp.restore(tmp_path / "from-spark")
        assert interp.results() == engine.results()
        assert {v: interp.read_map(v) for v in ("N_mS1", "N_mS2")} == _driver_views(engine)
        for b in stream[6:9]:
            interp.apply(b)
            oracle.apply(b)
        interp.checkpoint(tmp_path / "from-interp")
        engine.close()           # restored on a fresh engine: its driver program is first used there
        engine = SparkEngine(scalar.stage("spark"), spark=spark, partitions=2, checkpoint_dir=str(tmp_path / "d"))
        assert not any(_driver_views(engine).values())
        engine.restore(tmp_path / "from-interp")
        assert engine.results() == interp.results()
        _assert_equal(engine, scalar, oracle, "restored")
        for b in stream[9:]:
            engine.apply(b)
            oracle.apply(b)
            _assert_equal(engine, scalar, oracle, "after restore")
    finally:
        engine.close()
        interp.close()
        oracle.close()


def test_driver_native_off_keeps_the_views_python(scalar):
    """`dist_to_spark{driver_native=false}` (the A/B): the views stay IndexedMaps, the blocks Python,
    and --explain says so and why."""
    prog = compile_sql(SCALAR, mode="batch",
                       pass_options={"dist_to_spark": {"driver_native": False}}).stage("spark")
    assert not prog.native.driver and not prog.native.driver_views
    assert "driver local blocks: Python functions over IndexedMaps (2: local_block_1, local_block_3; " \
           "dist_to_spark{driver_native=false})" in explain_jobs(prog)
