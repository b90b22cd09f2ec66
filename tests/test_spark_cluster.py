"""The spark backend on a real standalone cluster (issue 10 item 7): a master and two 1-core
workers launched from the pyspark installation on 127.0.0.1; the CLI runs a query with
`--master spark://...` over a multi-batch stream with inserts and deletions and a shared
`--checkpoint-dir`; one worker is SIGKILLed mid-stream (with its executor and Python workers,
which hold resident view partitions); the run finishes on the other worker and its views equal
DuckDB's: nothing lost, nothing counted twice. Skipped only when no Java runtime is installed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toaster.checkpoint import latest_checkpoint
from toaster.pipeline import compile_sql
from toaster.runtime.csv_source import load_sources
from toaster.runtime.output import format_results

from spark_cluster import StandaloneCluster, java_available, process_tree
from test_checkpoint import SQL, assert_matches_duckdb, write_inputs

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not java_available(), reason="no Java runtime (Spark needs one)")


def _python_workers(cluster: StandaloneCluster, i: int) -> list[int]:
    """Python worker processes under worker i (they hold the replicas of the views)."""
    out = []
    for pid in cluster.executor_pids(i):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"pyspark" in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def _newest(state: Path) -> int:
    path = latest_checkpoint(state)
    return -1 if path is None else int(Path(path).name.split("-")[1])


def _cli(tmp_path: Path, master: str, state: Path) -> list[str]:
    return [sys.executable, "-m", "toaster.pipeline", str(tmp_path / "q.sql"), "--run", "--backend", "spark",
            "--master", master, "--checkpoint-dir", str(state), "--checkpoint-every", "1",
            "--batch-size", "2", "--output", "json", "--base-dir", str(tmp_path)]


def test_worker_killed_mid_stream_views_equal_duckdb(tmp_path):
    write_inputs(tmp_path, 5, n_r=24, n_s=10)
    relations = list(compile_sql(SQL).engine("interp").relations.values())
    tables, streams = load_sources(relations, batch_size=2, base_dir=str(tmp_path))
    batches = list(tables) + list(streams)
    total, kill_at = len(batches), 4
    assert total >= 12 and any((b.signs < 0).any() for b in batches), "a multi-batch stream with deletions"
    conf = tmp_path / "conf"           # how a user sizes executors: spark-defaults.conf
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.executor.memory 512m\nspark.executor.cores 1\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARK_CONF_DIR=str(conf), TOASTER_SPARK_START_TIMEOUT="120")
    cluster = StandaloneCluster(tmp_path / "cluster", workers=2).start()
    proc = None
    try:
        state = tmp_path / "state"
        proc = subprocess.Popen(_cli(tmp_path, cluster.url, state), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while proc.poll() is None and _newest(state) < kill_at and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before batch {kill_at}: {proc.communicate()[1]}"
        assert _newest(state) >= kill_at, "no progress on the cluster within 120 s"
        holders = [i for i in range(2) if _python_workers(cluster, i)]
        assert holders, "no worker ran Python tasks"
        victim = holders[0]
        for i in range(2):   # the driver's toaster reached every executor (addPyFile: first on sys.path)
            assert list((tmp_path / "cluster" / f"work-{i}").glob("app-*/*/toaster-package-*.zip")), \
                f"worker {i} got no toaster package"
        cluster.kill_worker(victim)
        killed_at = _newest(state)
        assert not any(p for p in process_tree(cluster.workers[victim].pid)[1:]), "the worker's tree is gone"
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert killed_at < total, "the kill came after the last batch"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
        cluster.stop()
    engine = compile_sql(SQL).engine("interp")
    assert engine.restore(latest_checkpoint(state))["batches"] == total
    assert json.loads(out) == json.loads(format_results(engine.results(), "json"))
    assert assert_matches_duckdb(compile_sql(SQL, mode="batch"), engine, batches) > 0
    # the same generated program on a local master: the same results
    local = subprocess.run(_cli(tmp_path, "local[2]", tmp_path / "state-local"), env=env,
                           capture_output=True, text=True, timeout=180)
    assert local.returncode == 0, local.stderr
    assert json.loads(local.stdout) == json.loads(out)
