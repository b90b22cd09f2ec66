"""Checkpoint / restore on the spark backend (docs/checkpoints.md): spark -> spark with deletions
(the restored state survives lost replicas), crossing to and from llvm and interp, refusals,
and the CLI killed with SIGKILL and resumed. Small data: every Spark job costs ~0.1-1 s."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toaster.backends.spark import native_state, state
from toaster.backends.spark.engine import SparkEngine
from toaster.backends.spark.runtime import last_job_id
from toaster.checkpoint import CheckpointError, latest_checkpoint, read_manifest
from toaster.errors import UnknownNameError
from toaster.pipeline import compile_sql
from toaster.runtime.csv_source import load_sources
from toaster.runtime.output import format_results
from toaster.testing.generator import random_stream

from test_checkpoint import SQL, assert_matches_duckdb, write_inputs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def comp():
    return compile_sql(SQL, mode="batch")


@pytest.fixture(scope="module")
def stream(comp):
    return random_stream(list(comp.engine("interp").relations.values()), seed=11, n_batches=16, deletes=True)


def _spark(comp, spark, tmp_path, name, partitions=3, **kw):
    return SparkEngine(comp.stage("spark"), spark=spark, partitions=partitions,
                       checkpoint_dir=str(tmp_path / f"spark-state-{name}"), **kw)


def _drop_replicas(spark, engine) -> None:
    """Every worker process forgets the engine's replicas, as if its executors were lost."""
    sc = spark.sparkContext
    # both kinds of replica: the Python maps (state.py) and the native partition programs' maps
    for drop in (state.drop_task, native_state.drop_task):
        sc.parallelize(range(6), 6).mapPartitionsWithIndex(drop(engine.program.store)).collect()


def test_spark_round_trip_with_deletions_then_more_batches(comp, stream, spark, tmp_path):
    assert any((b.signs < 0).any() for b in stream), "the stream should delete"
    first, rest = stream[:9], stream[9:]
    src = _spark(comp, spark, tmp_path, "src", checkpoint_every=2)   # its own snapshots in between
    dst = _spark(comp, spark, tmp_path, "dst", partitions=2, checkpoint_every=3)   # re-partitioned
    try:
        for b in first:
            src.apply(b)
        j0 = last_job_id(spark.sparkContext)
        src.checkpoint(tmp_path / "c", position={"batches": 9})
        assert last_job_id(spark.sparkContext) - j0 == 1, "every distributed view in one job"
        manifest = read_manifest(tmp_path / "c")
        assert (manifest["backend"], manifest["state"]) == ("spark", "maps")
        assert sorted(p.name for p in (tmp_path / "c").iterdir() if not p.name.endswith(".parquet")) \
            == ["manifest.json"], "nothing of Spark's own state directory"
        dst.apply(rest[0])                     # state the restore must replace, not add to
        old_store = Path(dst.program.root)
        assert dst.restore(tmp_path / "c") == {"batches": 9}
        assert not old_store.exists(), "the replaced history is deleted"
        assert assert_matches_duckdb(comp, dst, first) > 0
        assert {n: dst.read_map(n) for n in dst.program.MAP_TYPES} == \
            {n: src.read_map(n) for n in src.program.MAP_TYPES}
        for i, b in enumerate(rest):
            dst.apply(b)
            if i == 2:        # lost executors rebuild the *restored* state from the durable copy
                _drop_replicas(spark, dst)
        assert assert_matches_duckdb(comp, dst, stream) > 0
    finally:
        src.close()
        dst.close()


def test_llvm_to_spark_and_spark_to_interp(comp, stream, spark, tmp_path):
    first, rest = stream[:8], stream[8:]
    llvm = compile_sql(SQL).engine("llvm")          # tuple mode: the same maps
    for b in first:
        llvm.apply(b)
    llvm.checkpoint(tmp_path / "from-llvm")
    engine = _spark(comp, spark, tmp_path, "x")
    try:
        engine.restore(tmp_path / "from-llvm")
        assert engine.results() == llvm.results()
        for b in rest[:4]:
            engine.apply(b)
        engine.checkpoint(tmp_path / "from-spark", position={"batches": 12})
    finally:
        engine.close()
        llvm.close()
    interp = compile_sql(SQL).engine("interp")
    assert interp.restore(tmp_path / "from-spark") == {"batches": 12}
    for b in rest[4:]:
        interp.apply(b)
    assert assert_matches_duckdb(comp, interp, stream) > 0


def _interp_checkpoint(sql, batches, path) -> None:
    """A checkpoint written by interp after `batches`."""
    src = compile_sql(sql).engine("interp")
    for b in batches:
        src.apply(b)
    src.checkpoint(path)


def _apply_and_snapshot(engine, batches) -> tuple:
    """Apply `batches`; the results and the store they live in, to compare after a failed restore."""
    for b in batches:
        engine.apply(b)
    return engine.results(), engine.program.store


def test_mismatched_program_is_a_clean_checkpoint_error(comp, stream, spark, tmp_path):
    _interp_checkpoint(SQL.replace("MAX(A)", "MIN(A)"), stream[:4], tmp_path / "other")
    engine = _spark(comp, spark, tmp_path, "m")
    try:
        before, store = _apply_and_snapshot(engine, stream[:3])
        with pytest.raises(CheckpointError, match=r"another program: map QUERY_2___SQL_MAX_AGGREGATE_3 is not in the checkpoint"):
            engine.restore(tmp_path / "other")
        assert (engine.results(), engine.program.store) == (before, store)
        with pytest.raises(UnknownNameError):
            engine.read_map("NO_SUCH_MAP")
        engine.checkpoint(tmp_path / "mine")
    finally:
        engine.close()
    calc = compile_sql(SQL).engine("calc")
    with pytest.raises(CheckpointError, match="spark backend, which keeps maps"):
        calc.restore(tmp_path / "mine")


def test_failed_restore_job_leaves_the_engine_as_it_was(comp, stream, spark, tmp_path, monkeypatch):
    _interp_checkpoint(SQL, stream[:6], tmp_path / "c")
    engine = _spark(comp, spark, tmp_path, "f")
    try:
        before, store = _apply_and_snapshot(engine, stream[:3])

        def fails(*args):
            def run(_p, _elements):
                raise RuntimeError("executor lost mid-restore")
            return run
        monkeypatch.setattr(state, "restore_task", fails)
        monkeypatch.setattr(native_state, "restore_task", fails)      # native blocks' restore
        with pytest.raises(Exception, match="executor lost mid-restore"):
            engine.restore(tmp_path / "c")
        monkeypatch.undo()
        assert (engine.results(), engine.program.store) == (before, store)
        assert sorted(p.name for p in (tmp_path / "spark-state-f").iterdir()) == [store], \
            "the failed restore's new store is removed"
        for b in stream[3:]:
            engine.apply(b)
        assert assert_matches_duckdb(comp, engine, stream) > 0
    finally:
        engine.close()


def test_cli_spark_killed_after_a_checkpoint_then_resumed(tmp_path):
    write_inputs(tmp_path, 21, n_r=18, n_s=8)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "toaster.pipeline", str(tmp_path / "q.sql"), "--run", "--backend", "spark",
            "--checkpoint-dir", str(tmp_path / "state"), "--checkpoint-every", "1", "--batch-size", "3",
            "--output", "json", "--base-dir", str(tmp_path)]
    comp = compile_sql(SQL, mode="batch")
    relations = list(compile_sql(SQL).engine("interp").relations.values())
    tables, streams = load_sources(relations, batch_size=3, base_dir=str(tmp_path))
    total = len(tables) + len(streams)
    target = total // 2

    def newest() -> int:
        path = latest_checkpoint(tmp_path / "state")
        return -1 if path is None else int(Path(path).name.split("-")[1])
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while proc.poll() is None and newest() < target and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before batch {target}: {proc.communicate()[1]}"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    killed_at = newest()
    assert target <= killed_at < total
    assert (tmp_path / "state" / "spark-log").is_dir(), "the engine's own delta log, beside the checkpoints"
    done = subprocess.run(args + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed from" in done.stderr and f"({killed_at:,} batches already applied)" in done.stderr
    assert all(p.name.startswith("ckpt-") for p in (tmp_path / "state").iterdir()), \
        "the killed run's delta log is cleared; the finished run's too"
    engine = compile_sql(SQL).engine("interp")
    assert engine.restore(latest_checkpoint(tmp_path / "state"))["batches"] == total
    assert read_manifest(latest_checkpoint(tmp_path / "state"))["backend"] == "spark"
    assert json.loads(done.stdout) == json.loads(format_results(engine.results(), "json"))
    assert assert_matches_duckdb(comp, engine, list(tables) + list(streams)) > 0


def test_cli_spark_applies_each_window_of_both_streams_in_one_job(spark, tmp_path, capsys, monkeypatch):
    """--run feeds a window of the sequence-ordered streams (a Batch of R and one of S) as one
    step: the spark engine runs it as one job; the printed views equal DuckDB's."""
    from toaster.pipeline import main
    write_inputs(tmp_path, 23, n_r=12, n_s=9)
    steps = []
    real = SparkEngine._apply_many

    def apply_many(self, batches):
        real(self, batches)
        steps.append(({b.relation for b in batches}, self.jobs_last_batch))
    monkeypatch.setattr(SparkEngine, "_apply_many", apply_many)
    assert main([str(tmp_path / "q.sql"), "--run", "--backend", "spark", "--batch-size", "4",
                 "--output", "json", "--base-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    both = [jobs for rels, jobs in steps if rels == {"R", "S"}]
    assert both and all(jobs == 1 for jobs in both), steps
    comp = compile_sql(SQL)
    engine = comp.engine("interp")
    tables, streams = load_sources(list(engine.relations.values()), batch_size=4, base_dir=str(tmp_path))
    for b in list(tables) + list(streams):
        engine.apply(b)
    assert out == json.loads(format_results(engine.results(), "json"))
    assert assert_matches_duckdb(comp, engine, list(tables) + list(streams)) > 0


@pytest.mark.parametrize("replicate", [False, True])
def test_view_copies_cross_engines_and_survive_lost_replicas(spark, tmp_path, replicate):
    """A program whose view is kept twice (placement.view_copies: test_dist.CHAIN without
    replication): its checkpoint holds the logical views only (interp reads it), and a restore
    fills the copy from its view. With replication (the default) the same program keeps C's view
    whole on every partition (placement.choose_replicated): the checkpoint reads it once, not
    once per partition, a restore gives every partition all of it, and each partition's replica
    is rebuilt from its own durable copy."""
    from test_dist import CHAIN
    comp = compile_sql(CHAIN, mode="batch", pass_options={"m3_to_dist": {"replicate": replicate, "broadcast": "C"}})
    prog = comp.stage("spark")
    if replicate:
        assert "VIEW_COPIES = {}" in prog.source and "': ()" in prog.source
    else:
        assert "VIEW_COPIES = {'" in prog.source
    batches = random_stream(list(comp.engine("interp").relations.values()), seed=21, n_batches=14,
                            deletes=True)
    first, rest = batches[:7], batches[7:]
    interp = comp.engine("interp")
    for b in first:
        interp.apply(b)
    interp.checkpoint(tmp_path / "from-interp")
    engine = _spark(comp, spark, tmp_path, "copies", partitions=2, checkpoint_every=4)
    try:
        engine.restore(tmp_path / "from-interp")
        for i, b in enumerate(rest):
            engine.apply(b)
            if i == 3:       # every worker forgets the native replicas: rebuilt from the durable copy
                spark.sparkContext.parallelize(range(6), 6).mapPartitionsWithIndex(
                    native_state.drop_task(engine.program.store)).collect()
        assert assert_matches_duckdb(comp, engine, batches) > 0
        copies = engine.module.Program.VIEW_COPIES
        assert replicate or copies
        assert all(engine.read_map(c) == engine.read_map(v) for c, v in copies.items())
        engine.checkpoint(tmp_path / "from-spark")
    finally:
        engine.close()
    back = comp.engine("interp")
    back.restore(tmp_path / "from-spark")
    assert assert_matches_duckdb(comp, back, batches) > 0
