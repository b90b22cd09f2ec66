"""The Spark engine's state design (docs/spark-engine.md): plans stay bounded over a long run,
one Spark job per single-relation batch, views equal to DuckDB after every batch, and
replicas that a worker process loses are rebuilt from the durable copy (snapshot + log)."""
from __future__ import annotations

import re

from toaster.backends.spark import state
from toaster.backends.spark.engine import SparkEngine
from toaster.pipeline import compile_sql
from toaster.testing import Oracle, compare_results, random_stream

from test_dist import JOIN3


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
