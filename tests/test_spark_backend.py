"""The PySpark backend end to end: generated programs run on the shared local Spark session
and are compared, map by map after every batch, with the reference InterpEngine, and their
results with DuckDB. Kept small: every Spark job costs ~0.1-1 s."""
from __future__ import annotations

import ast

import pytest

from toaster.backends.interp import InterpEngine
from toaster.backends.spark.engine import SparkEngine
from toaster.errors import InputError
from toaster.pipeline import compile_sql, print_stage
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

from test_dist import GROUP_SUM, JOIN3, SELF_JOIN  # the same three queries as the dist-stage tests


def _run(sql, spark, *, n_batches, seed, **engine_kw):
    comp = compile_sql(sql, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, **engine_kw)
    m3 = comp.stage("m3", "distributed")       # the batch program the distributed branch runs
    ref = InterpEngine(m3)
    oracle = Oracle(comp.m3.relations)
    batches = random_stream(comp.m3.relations, seed=seed, n_batches=n_batches, max_batch=8,
                            min_batch=4, deletes=True)
    assert any((b.signs < 0).any() for b in batches), "the stream should delete"
    nonzero = 0
    try:
        for batch in batches:
            engine.apply(batch)
            ref.apply(batch)
            oracle.apply(batch)
            for m in m3.maps:
                got = engine.read_map(m.name)
                assert got == ref.read_map(m.name), m.name
                nonzero += bool(got)
        for q, sql_q in zip(comp.queries, comp.oracle_sql):
            diffs = compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns))
            assert not diffs, diffs
    finally:
        engine.close()
        oracle.close()
    assert nonzero, "the test compared only empty maps"
    return engine


@pytest.mark.parametrize("sql, n_batches", [(GROUP_SUM, 3), (JOIN3, 5), (SELF_JOIN, 3)],
                         ids=["group_sum_filter", "join3_sum", "self_join_count"])
def test_spark_matches_interp_and_duckdb(spark, sql, n_batches):
    _run(sql, spark, n_batches=n_batches, seed=1, partitions=3)


def test_state_survives_checkpoints_and_other_partition_counts(spark):
    _run(SELF_JOIN, spark, n_batches=3, seed=3, checkpoint_every=1, partitions=3)


def test_engine_from_m3_with_partitioning_override_and_program_file(spark, tmp_path):
    comp = compile_sql(GROUP_SUM, mode="batch")
    m3 = comp.stage("m3", "distributed")
    engine = SparkEngine(m3, spark=spark, partitioning={m.name: "local" for m in m3.maps})
    ref = InterpEngine(m3)
    try:
        b = Batch.from_rows("R", engine.relations["R"].types, [(3, 1), (4, 1), (5, 2), (1, 2)], [1, 1, 1, 1])
        d = Batch.from_rows("R", engine.relations["R"].types, [(4, 1), (9, 9)], [-1, 1])
        for x in (b, d):
            engine.apply(x)
            ref.apply(x)
        assert engine.results() == ref.results()
        with pytest.raises(InputError):     # rejected whole, views unchanged
            engine.apply(Batch.from_rows("R", engine.relations["R"].types, [(1, 1)], [2]))
        assert engine.results() == ref.results()
        path = tmp_path / "prog.py"
        engine.write_program(str(path))
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.ClassDef) and n.name == "Program" for n in tree.body)
    finally:
        engine.close()


def test_pipeline_engine_and_dump(spark):
    comp = compile_sql(GROUP_SUM, mode="batch")
    assert "ON BATCH R" in print_stage("dist", comp.stage("dist"))
    assert "class Program" in print_stage("spark", comp.stage("spark"))
    engine = comp.engine("spark")
    try:
        engine.insert("R", (5, 1))
        engine.insert("R", (7, 1))
        engine.delete("R", (5, 1))
        assert engine.results() == InterpEngine_results(comp, [((5, 1), 1), ((7, 1), 1), ((5, 1), -1)])
    finally:
        engine.close()


def InterpEngine_results(comp, ops):
    ref = InterpEngine(comp.m3)
    for row, sign in ops:
        (ref.insert if sign > 0 else ref.delete)("R", row)
    return ref.results()


_START_THEN_RETRY = r"""
import os, sys
from toaster.backends.spark.session import get_spark, _spark_jvms
from toaster.errors import EngineStartError
os.environ["TOASTER_SPARK_START_TIMEOUT"] = "0.5"
try:
    get_spark()
    sys.exit("started within 0.5 s: the time-out was not exercised")
except EngineStartError as e:
    print("refused:", e)
print("left:", _spark_jvms())
del os.environ["TOASTER_SPARK_START_TIMEOUT"]
print("sum:", get_spark().sparkContext.parallelize(range(10)).sum())
"""


def test_a_spark_start_that_times_out_leaves_no_jvm_and_a_later_start_works():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("TOASTER_SPARK_START_TIMEOUT", None)
    proc = subprocess.run([sys.executable, "-c", _START_THEN_RETRY], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("refused: error: Spark did not start within 0.5 s"), lines
    assert lines[1] == "left: []" and lines[2] == "sum: 45", lines
