"""The string pools of the spark engine's native programs are collected (native_exec.py, "String
pool"; docs/spark-engine.md "String pools are collected"): over a stream whose every step brings
new strings and deletes the previous step's, the pools of the worker processes and of the
driver stay bounded while the views stay DuckDB-equal -- across map sets switched in a process
(3 partitions), snapshots, replicas dropped and rebuilt, a checkpoint restored, failed steps
undone, and driver views with string keys whose undo records span a step."""
from __future__ import annotations

import numpy as np
import pytest

from bench.spark_state.string_pools import STRINGS, pools, stream
from toaster.backends.spark import native_state
from toaster.backends.spark.engine import SparkEngine
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results

COLLECT_MIN = 64      # the pools' threshold in these tests (default 16,384): many collections
ROWS = 20             # new names per step; the database holds at most 2 x ROWS of them


@pytest.fixture(scope="module")
def comp():
    return compile_sql(STRINGS, mode="batch")


def _assert_equal(engine, comp, oracle, step) -> None:
    for q, sql_q in zip(comp.queries, comp.oracle_sql):
        assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), step


def _sizes(spark, keys) -> list:
    """(where, dictionary slots, collections) of every pool of the engine's programs."""
    driver, workers = pools(spark)
    out = [("driver", slots, coll) for k, slots, _, coll in driver if k in keys]
    return out + [(pid, slots, coll) for pid, sizes in workers.items() for k, slots, _, coll in sizes if k in keys]


def _overflow(types, step: int) -> Batch:
    """Two rows of one name whose V sum to 2^63: TOTAL overflows, the step is undone."""
    return Batch.from_rows("R", types, [(9, f"big-{step}", 2 ** 62), (9, f"big-{step}", 2 ** 62)])


def _run(engine, comp, spark, steps: int, tmp_path, drop_at=None, restore_at=None) -> list:
    oracle = Oracle(comp.m3.relations)
    keys = {engine.program.native.key, (engine.program.native.driver_program or engine.program.native).key}
    engine.program._native_spec["collect_min"] = COLLECT_MIN
    types = engine.relations["R"].types
    seen = []
    try:
        for i, step in enumerate(stream(steps, ROWS), start=1):
            if i % 9 == 0:        # a failed step: nothing of it stays, its new strings neither
                with pytest.raises(IntegerOverflowError):
                    engine.apply_many(step + [_overflow(types, i)])
            engine.apply_many(step)
            for b in step:
                oracle.apply(b)
            _assert_equal(engine, comp, oracle, i)
            if i == drop_at:      # every worker forgets its replicas: rebuilt from the durable copy
                spark.sparkContext.parallelize(range(8), 8).mapPartitionsWithIndex(
                    native_state.drop_task(engine.program.store)).collect()
            if i == restore_at:
                engine.checkpoint(tmp_path / "ckpt")
                engine.restore(tmp_path / "ckpt")
                _assert_equal(engine, comp, oracle, "restored")
            if i % 10 == 0:
                seen.append(_sizes(spark, keys))
    finally:
        oracle.close()
    return seen


def _assert_bounded(seen: list, steps: int) -> None:
    """The last sizes: every pool below what its live strings allow (without collection the
    driver's holds all steps x ROWS names, and the workers' those their partitions saw)."""
    # live strings per process: the database's ROWS names (a process may hold every partition),
    # a step's new and deleted ones in the temps; a collection runs when the pool doubled
    # since the last one, or reached COLLECT_MIN
    bound = 2 * max(COLLECT_MIN, 3 * ROWS) + 3 * ROWS
    assert bound < steps * ROWS / 2
    last = seen[-1]
    driver = [(slots, coll) for w, slots, coll in last if w == "driver"]
    workers = [(slots, coll) for w, slots, coll in last if w != "driver"]
    assert driver and workers, last
    assert all(slots <= bound for slots, _ in driver), (bound, last)
    # a worker's pool is collected only when one of its tasks starts; until then it also takes the
    # names of every partition it serves and of the records shuffled to it (one worker reached 203
    # slots at load ~10 where this bound was the driver's); without collection the second test's
    # workers pass 2 x bound
    assert all(slots <= 2 * bound for slots, _ in workers), (2 * bound, last)
    assert driver[0][1] >= 2 and sum(coll for _, coll in workers) >= 2, last


def test_pools_stay_bounded_over_new_strings(comp, spark, tmp_path):
    """Distributed views keyed by the strings (3 partitions: a worker switches between map
    sets), a driver block interning the batch's strings, snapshots every 4 triggers, replicas
    dropped mid-stream, a checkpoint restored, failed steps."""
    steps = 20
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=3, checkpoint_every=4,
                         checkpoint_dir=str(tmp_path / "c"))
    try:
        seen = _run(engine, comp, spark, steps, tmp_path, drop_at=4, restore_at=8)
    finally:
        engine.close()
    _assert_bounded(seen, steps)


def test_driver_views_with_string_keys(comp, spark, tmp_path):
    """N and TOTAL kept on the driver (resident in its JIT, undone by the native undo log): the
    driver's pool is collected between steps, never while a step's undo records are pending."""
    m3 = comp.stage("m3", "distributed")
    engine = SparkEngine(m3, spark=spark, partitions=2, checkpoint_every=5, checkpoint_dir=str(tmp_path / "c"),
                         partitioning={"N": "local", "TOTAL": "local"})
    assert {"N", "TOTAL"} <= set(engine.program.native.driver_views)
    steps = 40
    try:
        seen = _run(engine, comp, spark, steps, tmp_path, drop_at=15)
        # the guard: with undo records pending (a step under way), the pool is not collected
        nm = engine.program._driver_module()
        results = engine.results()
        nm.log(True)
        nm.set_entries("N", [np.array(["pending"], dtype=object)], np.array([1]))
        pool = nm.engine._pool
        pool.collect_min, pool._live_after_collect = 0, 0       # due now
        assert not nm.maybe_collect()
        nm.rollback()
        assert nm.maybe_collect()        # once the records are gone it is
        assert "pending" not in pool.ids
        assert engine.results() == results
    finally:
        engine.close()
    _assert_bounded(seen, steps)
