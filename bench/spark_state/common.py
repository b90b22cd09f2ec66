"""Shared pieces of the state-design prototypes: the session, the workload, the meters.

Workload: one distributed map M[k] += v (P partitions by hash of k). Every batch of B tuples
half updates existing keys and half inserts new ones, and reads M at the batch's keys (the
shape of `TMP[k] * VIEW[k]` in a Hot Dog dist block). State is bulk-loaded to S keys
(untimed), then `measure` batches are timed; then bulk-loaded to 10*S and timed again.
Reported: per-batch driver CPU (time.process_time), Spark-side CPU (JVM + Python workers,
from /proc, summed over the process tree) and wall time, as medians, and the 10x/1x ratios.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from toaster.backends.spark.runtime import last_job_id

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def spark_session(extra: dict | None = None):
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[2]").appName("toaster-state-proto")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"))
    for k, v in (extra or {}).items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def _tree_cpu(pid: int) -> float:
    """utime+stime (s) of pid and all its live descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                children.setdefault(int(parts[1]), []).append(int(d))
            except OSError:
                pass
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            total += (int(parts[11]) + int(parts[12])) / tick
        except OSError:
            pass
        todo += children.get(p, [])
    return total


def spark_cpu(spark) -> float:
    return _tree_cpu(spark.sparkContext._gateway.proc.pid)


class Workload:
    def __init__(self, seed=1):
        self.rng = random.Random(seed)
        self.next_key = 0

    def load(self, n):
        rows = [(self.next_key + i, 1.0) for i in range(n)]
        self.next_key += n
        return rows

    def batch(self, b):
        old = [(self.rng.randrange(self.next_key), self.rng.random()) for _ in range(b // 2)]
        return old + self.load(b - b // 2)




def run(name, spark, make, *, state=20_000, batch=1_000, measure=8, growth=10):
    """make(spark) -> object with .apply(rows) (returns the read-sum) and .jobs_per_batch()."""
    impl = make(spark)
    wl = Workload()
    sc = spark.sparkContext
    out = {}
    loaded = 0
    for level in (1, growth):
        while loaded < state * level:                   # untimed bulk load in chunks
            n = min(50_000, state * level - loaded)
            impl.apply(wl.load(n))
            loaded += n
        impl.apply(wl.batch(batch))                     # warm-up
        walls, cpus, sparks, jobs = [], [], [], []
        for _ in range(measure):
            rows = wl.batch(batch)
            j0 = last_job_id(sc)
            c0, s0, w0 = time.process_time(), spark_cpu(spark), time.perf_counter()
            impl.apply(rows)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            sparks.append(spark_cpu(spark) - s0)
            jobs.append(last_job_id(sc) - j0)
        out[level] = dict(wall=statistics.median(walls), driver_cpu=statistics.median(cpus),
                          spark_cpu=statistics.median(sparks), jobs=max(jobs), state=loaded)
    a, b = out[1], out[growth]
    print(f"{name}: state {a['state']}->{b['state']} keys, batch {batch}, jobs/batch {a['jobs']}/{b['jobs']}")
    for k in ("wall", "driver_cpu", "spark_cpu"):
        print(f"  {k:10s} 1x {a[k]*1000:8.1f} ms   {growth}x {b[k]*1000:8.1f} ms   ratio {b[k]/max(a[k],1e-9):5.2f}")
    return out


def tpch_engine_and_batches(query: str, data: str, spark, *, batch: int, batches: int, partitions: int,
                            pass_options: dict | None = None, **engine_options):
    """A SparkEngine for bench query `query` (batch mode) over the bench stream in `data` (a
    `python -m bench --scale ...` stream directory), its static tables loaded, and the stream's
    first `batches` steps of `batch` events as `apply_many` groups (as the bench feeds them)."""
    import json
    from bench.harness import find_query
    from bench.stream import load_event_stream
    from bench.tpch import StreamInfo
    from toaster.backends.spark.engine import SparkEngine
    from toaster.pipeline import compile_sql

    with open(os.path.join(data, "manifest.json")) as f:
        si = StreamInfo(**json.load(f))
    es = load_event_stream(si.schema_sql())
    comp = compile_sql(si.schema_sql() + "\n" + find_query(query).text, mode="batch", pass_options=pass_options)
    names = {r.name for r in comp.m3.relations}
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=partitions, **engine_options)
    for b in es.tables:
        if b.relation in names:
            engine.apply(b)
    groups = es.batches(batch, relations=sorted(names & set(es.stream_names)), limit=batch * batches)
    return engine, groups


def step_args(description: str | None = None) -> argparse.ArgumentParser:
    """The arguments of the per-step input benches (frames.py, executor_steps.py): queries, the
    bench stream directory, events per step, steps, partitions."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("queries", nargs="+")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, default=100000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=2)
    return ap
