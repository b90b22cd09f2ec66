"""The Spark engine's state design (docs/spark-engine.md): plans stay bounded over a long run,
one Spark job per batch (a single relation's, or all relations' of a multi-relation batch),
views equal to DuckDB after every batch, a failed batch undone as a whole, and replicas that
a worker process loses are rebuilt from the durable copy (snapshot + log)."""
from __future__ import annotations

import re

import pytest

from toaster.backends.spark import state
from toaster.backends.spark.engine import SparkEngine
from toaster.backends.spark.runtime import planned_counts
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

from test_dist import GLOBAL_SUM, JOIN3


def _plan_shape(rdd) -> str:
    """The job's RDD tree: one line per RDD, ids and call sites taken out (ids grow, and the
    JVM names call sites as it pleases; the structure must not change)."""
    text = rdd.toDebugString()
    text = text.decode() if isinstance(text, bytes) else text
    return "\n".join(re.sub(r"\[\d+\].*", "", line) for line in text.splitlines())


def test_long_run_plans_bounded_one_job_per_batch_equal_to_duckdb(spark, tmp_path):
    comp = compile_sql(JOIN3, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2, checkpoint_every=50,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    oracle = Oracle(comp.m3.relations)
    batches = random_stream(comp.m3.relations, seed=7, n_batches=200, min_batch=1, max_batch=3,
                            deletes=True)
    q, sql_q = comp.queries[0], comp.oracle_sql[0]
    first_shape, last_shape, jobs, nonzero = {}, {}, [], 0
    try:
        for i, batch in enumerate(batches, start=1):
            before = engine.program.batches
            engine.apply(batch)
            oracle.apply(batch)
            after = engine.program.batches       # triggers run (a batch that nets to nothing runs none)
            snapshot = after != before and after % 50 == 0
            jobs.append(engine.jobs_last_batch - snapshot if after != before else 1)
            if after != before:
                shape = _plan_shape(engine.program.last_job_plan)
                first_shape.setdefault(batch.relation, shape)
                last_shape[batch.relation] = shape
            got = engine.result(q.name)
            diffs = compare_results(got, oracle.query(sql_q), len(q.key_columns))
            assert not diffs, (i, diffs)
            nonzero += bool(got.rows)
            if i == 120:      # every worker process forgets its replicas: rebuilt from snapshot + log
                sc = spark.sparkContext
                sc.parallelize(range(4), 4).mapPartitionsWithIndex(state.drop_task(engine.program.store)).collect()
        assert jobs == [1] * len(batches)
        assert last_shape == first_shape            # batch 200's plan is batch 1's
        assert nonzero > 50
        assert list((tmp_path / "ckpt").rglob("snap-*")), "snapshots are written under checkpoint_dir"
        for m in comp.stage("m3", "distributed").maps:   # every view, read back from the executors
            engine.read_map(m.name)
    finally:
        engine.close()
        oracle.close()


def _groups(batches, size):
    """Consecutive stream batches in groups of `size` (one step of a multi-relation stream)."""
    return [batches[i:i + size] for i in range(0, len(batches), size)]


def _all_maps(engine, comp) -> dict:
    return {m.name: engine.read_map(m.name) for m in comp.stage("m3", "distributed").maps}


def test_multi_relation_batches_one_job_each_equal_to_duckdb_and_undone_whole(spark, tmp_path):
    """JOIN3 fed three relations per batch (apply_many): ONE job per batch, the later triggers
    seeing the earlier ones' updates (DuckDB-equal after every batch); a batch whose last
    trigger overflows leaves every view, driver and executors, as it was."""
    comp = compile_sql(JOIN3, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2, checkpoint_every=0,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    oracle = Oracle(comp.m3.relations)
    rels = {r.name: r for r in comp.m3.relations}
    batches = random_stream(comp.m3.relations, seed=11, n_batches=45, min_batch=1, max_batch=4, deletes=True)
    q, sql_q = comp.queries[0], comp.oracle_sql[0]
    jobs, stages, nonzero = [], [], 0
    try:
        for i, group in enumerate(_groups(batches, 3), start=1):
            engine.apply_many(group)
            for b in group:
                oracle.apply(b)
            jobs.append(engine.jobs_last_batch)
            stages.append(engine.stages_last_batch)
            got = engine.result(q.name)
            diffs = compare_results(got, oracle.query(sql_q), len(q.key_columns))
            assert not diffs, (i, diffs)
            nonzero += bool(got.rows)
            if i == 5:            # R's and S's triggers update views; T's then overflows 64 bits
                before = _all_maps(engine, comp)
                k = 10 ** 6       # a key no generated row has: only T's trigger multiplies the two
                huge = [Batch.from_rows("R", rels["R"].types, [(2 ** 62, k)]),
                        Batch.from_rows("S", rels["S"].types, [(k, k)]),
                        Batch.from_rows("T", rels["T"].types, [(k, 2 ** 62)])]
                with pytest.raises(IntegerOverflowError):
                    engine.apply_many(huge)
                assert _all_maps(engine, comp) == before
        assert jobs == [1] * len(jobs)
        planned = planned_counts(type(engine.program), ["R", "S", "T"], comp.stage("spark").native.inputs)
        assert planned[0] == 1 and planned[1] >= 2 and planned[1] in stages     # --explain's count
        assert nonzero > 5
    finally:
        engine.close()
        oracle.close()


def test_global_aggregate_is_distributed_one_job_per_batch(spark, tmp_path):
    """A query with no keyed view (Q6-like) runs on the executors: the batch spread over the
    partitions, partial sums there, one Gather into the driver's view, in one job."""
    comp = compile_sql(GLOBAL_SUM, mode="batch")
    assert "run_dist(" in comp.stage("spark").source
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2, checkpoint_every=0,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    oracle = Oracle(comp.m3.relations)
    q, sql_q = comp.queries[0], comp.oracle_sql[0]
    try:
        for i, batch in enumerate(random_stream(comp.m3.relations, seed=3, n_batches=8, max_batch=12,
                                                deletes=True), start=1):
            engine.apply(batch)
            oracle.apply(batch)
            assert engine.jobs_last_batch == 1, i
            assert not compare_results(engine.result(q.name), oracle.query(sql_q), 0), i
    finally:
        engine.close()
        oracle.close()


def test_apply_many_checks_every_batch_first_and_equals_one_after_another():
    """Engine.apply_many (the entry point spark plans as one job) on the reference engine: the
    same views as apply one after another; a malformed batch rejects the whole step."""
    from toaster.errors import InputError
    comp = compile_sql(JOIN3, mode="batch")
    rels = {r.name: r for r in comp.m3.relations}
    together, apart = comp.engine("interp"), comp.engine("interp")
    batches = random_stream(comp.m3.relations, seed=4, n_batches=12, max_batch=5, deletes=True)
    for group in _groups(batches, 3):
        together.apply_many(group)
        for b in group:
            apart.apply(b)
        assert together.results() == apart.results()
    before = together.results()
    bad = Batch.from_rows("NOPE", rels["T"].types, [(1, 1)])      # an unknown relation
    with pytest.raises(InputError):
        together.apply_many([Batch.from_rows("R", rels["R"].types, [(5, 1)]), bad])
    assert together.results() == before
