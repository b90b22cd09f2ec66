"""Native blocks on Spark (issue 10 item 5, docs/spark-engine.md "Native blocks"): the dist blocks
of a program run as one LLVM partition program JIT-compiled once per worker process; records
move between stages as columns; the native maps are the replicas, with a columnar durable copy."""
from __future__ import annotations

import pytest

from toaster.backends.spark import native_state
from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.errors import IntegerOverflowError, UnsupportedError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

from test_dist import JOIN3
from test_query_suite import SPARK_SUBSET, _id, compiled

GROUP_SUM = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT B, SUM(A) FROM R GROUP BY B;"""


def _jits(spark, key: str) -> dict:
    """pid -> (JIT compiles, set-ups incl. loads from the object cache) of the program `key` in
    the worker processes a wide job reaches."""
    sc = spark.sparkContext
    out = {}
    for pid, jits, loads in sc.parallelize(range(8), 8).mapPartitionsWithIndex(
            native_state.compiles_task()).collect():
        out[pid] = (sum(1 for k, _ in jits if k == key), sum(1 for k, _ in loads if k == key))
    return out


@pytest.mark.parametrize("path", SPARK_SUBSET, ids=_id)
def test_spark_subset_compiles_its_dist_blocks_natively(path):
    """Every spark-subset program with partition blocks gets a native partition program and
    runs it by default (no fallback): test_query_suite's spark tests then run exactly this
    program against DuckDB after every batch, so it is not run a second time here."""
    comp = compiled(path, "batch")
    prog = comp.stage("spark")
    has_dist = any(b.mode == "dist" for b in prog.blocks)
    assert (prog.native is not None) == has_dist          # native by default, no fallback
    assert ("BLOCKS = 'native'" in prog.source) == has_dist


def test_replica_dropped_is_rebuilt_from_columnar_copy_and_jit_once_per_process(spark, tmp_path):
    comp = compile_sql(JOIN3, mode="batch")
    prog = comp.stage("spark")
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=20,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    assert engine.program.native is prog.native
    oracle = Oracle(comp.m3.relations)
    q, sql_q = comp.queries[0], comp.oracle_sql[0]
    batches = random_stream(comp.m3.relations, seed=5, n_batches=60, min_batch=1, max_batch=4, deletes=True)
    nonzero = 0
    try:
        for i, batch in enumerate(batches, start=1):
            engine.apply(batch)
            oracle.apply(batch)
            got = engine.result(q.name)
            assert not compare_results(got, oracle.query(sql_q), len(q.key_columns)), i
            nonzero += bool(got.rows)
            if i == 10:
                first = _jits(spark, prog.native.key)
                assert all(j <= 1 for j, _ in first.values()), first     # at most one JIT per process
                assert any(n for _, n in first.values()), first         # (a later one loads the code)
            if i == 30:
                files = [p.name for p in (tmp_path / "ckpt").rglob("*") if p.is_file()]
                assert any(f.startswith("snap-") and f.endswith(".arrow") for f in files)
                assert any(f.startswith("delta-") and f.endswith(".arrow") for f in files)
            if i == 35:       # every worker forgets its native maps: rebuilt from snapshot + deltas
                spark.sparkContext.parallelize(range(8), 8).mapPartitionsWithIndex(
                    native_state.drop_task(engine.program.store)).collect()
        later = _jits(spark, prog.native.key)
        assert all(j <= 1 for j, _ in later.values()), later     # rebuilt maps: no new JIT either
        assert nonzero > 10
        for m in comp.stage("m3", "distributed").maps:
            engine.read_map(m.name)
    finally:
        engine.close()
        oracle.close()


def test_overflow_in_native_block_undoes_the_batch(spark, tmp_path):
    comp = compile_sql(GROUP_SUM, mode="batch")
    prog = comp.stage("spark")
    assert prog.native is not None
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=0,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    types = engine.relations["R"].types
    q = comp.queries[0]
    try:
        engine.apply(Batch.from_rows("R", types, [(2 ** 62, 1), (5, 2)]))
        before = engine.result(q.name)
        # the view's sum at B=1 leaves 64 bits inside the partition's native block
        with pytest.raises(IntegerOverflowError, match=q.name):
            engine.apply(Batch.from_rows("R", types, [(2 ** 62, 1), (7, 2)]))
        assert engine.result(q.name) == before
        engine.apply(Batch.from_rows("R", types, [(1, 1), (7, 2)]))
        oracle = Oracle(comp.m3.relations)
        try:
            oracle.apply(Batch.from_rows("R", types, [(2 ** 62, 1), (5, 2), (1, 1), (7, 2)]))
            assert not compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), 1)
        finally:
            oracle.close()
    finally:
        engine.close()


def test_python_blocks_stay_an_explicit_option_and_explain_says_which(spark):
    comp = compile_sql(GROUP_SUM, mode="batch")
    assert "native LLVM code" in explain_jobs(comp.stage("spark"))
    engine = SparkEngine(comp.stage("m3", "distributed"), spark=spark, partitions=2, blocks="python")
    try:
        assert engine.program.native is None and engine.program.BLOCKS == "python"
        engine.apply(Batch.from_rows("R", engine.relations["R"].types, [(3, 1), (4, 1)]))
        assert engine.read_map(comp.queries[0].value_maps[0]) == {(1,): 7}
    finally:
        engine.close()
    with pytest.raises(UnsupportedError, match="blocks"):
        SparkEngine(comp.stage("m3", "distributed"), spark=spark, blocks="jvm")


def test_what_native_code_cannot_run_is_refused_at_compile_time():
    """No silent fall back to Python: a dist block the llvm codegen refuses fails generation
    with the UnsupportedError naming the construct."""
    from dataclasses import replace
    from toaster.backends.spark.native import partition_program
    from toaster.imperative.ir import Call, Declare, Lit, LocalRef
    from toaster.types import INT, STRING
    comp = compile_sql(GROUP_SUM, mode="batch")
    prog = comp.stage("spark")
    block = next(b for b in prog.blocks if b.mode == "dist")
    trig = block.imp.triggers[0]
    bad = Declare(LocalRef("s", STRING), Call("cast_string", (Lit(1, INT),), STRING))
    imp = replace(block.imp, triggers=(replace(trig, body=(bad,) + trig.body),))
    with pytest.raises(UnsupportedError, match=r"function cast_string\(\)"):
        partition_program(prog.dist, [replace(block, imp=imp)])


def test_warm_up_job_has_a_batch_shape(spark):
    """Engine start runs one warm-up job shaped like a batch's (a stage, a shuffle, a stage,
    collect: the JVM's shuffle path and Arrow's first uses run before the first batch, which
    paid ~300 ms for them; docs/spark-engine.md "The first batch"), and the batches after it
    stay correct."""
    from bench.sparksql import job_count_since
    from toaster.backends.spark.runtime import last_job_id
    comp = compile_sql(GROUP_SUM, mode="batch")
    sc = spark.sparkContext
    job0 = last_job_id(sc)
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    try:
        assert job_count_since(sc, job0)[:2] == (1, 2)
        oracle = Oracle(comp.m3.relations)
        for batch in random_stream(comp.m3.relations, seed=3, n_batches=4, min_batch=1, max_batch=5, deletes=True):
            engine.apply(batch)
            oracle.apply(batch)
            q = comp.queries[0]
            assert not compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns))
        oracle.close()
    finally:
        engine.close()
