"""`--run --backend spark --batch-size N` with `--spark-input driver` against `executors`, step
by step, on a bench stream's own files (the CLI's two paths, in one process and one Spark session):

* driver:     open_sources(..., steps=True) (the CLI's Arrow reader on the driver) + apply_many;
* executors:  file_ranges.range_steps (the driver finds byte offsets, parses nothing) +
              apply_frames (a task per byte range reads and parses it).

    python -m bench.spark_state.executor_steps tpch_q3 --data DIR --batch 100000 --batches 6

DIR is a bench stream directory (tpch-sf0.1-seed1-...). Per path: the first `batches` steps of
`batch` events in seq order (the same windows on both paths); per step the driver's CPU
(time.process_time: reading included), Spark's CPU (JVM and Python workers, /proc) and wall;
medians over steps 2.. (step 1 pays the executors' JIT), and the planning time of range_steps
(the scan of the files, paid at the first step).
"""
from __future__ import annotations

import itertools
import json
import os
import statistics
import time

from bench.spark_state.common import spark_cpu, step_args


def measure(query: str, data: str, spark, *, batch: int, batches: int, partitions: int, path: str) -> dict:
    from bench.harness import find_query
    from bench.tpch import StreamInfo
    from toaster.backends.spark.engine import SparkEngine
    from toaster.backends.spark.file_ranges import range_steps
    from toaster.pipeline import compile_sql
    from toaster.runtime.csv_source import open_sources

    with open(os.path.join(data, "manifest.json")) as f:
        si = StreamInfo(**json.load(f))
    comp = compile_sql(si.schema_sql() + "\n" + find_query(query).text, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=partitions)
    decls = list(engine.relations.values())
    tables, streams = open_sources(decls, batch, relations_used=engine.relations_needed(),
                                   columns=engine.columns_needed, steps=True)
    for step in tables:
        engine.apply_many(step)
    c0, w0 = time.process_time(), time.perf_counter()
    if path == "executors":
        streams = range_steps(decls, batch, relations_used=engine.relations_needed(), parts=partitions)
    streams = iter(streams)
    rows, first = [], None
    for _ in range(batches):
        c1, s1, w1 = time.process_time(), spark_cpu(spark), time.perf_counter()
        step = next(streams, None)
        if step is None:
            break
        if first is None:          # the first step's reading or planning, alone
            first = (time.process_time() - c0, time.perf_counter() - w0)
        if path == "executors":
            engine.apply_frames([(r.relation, r) for r in step])
        else:
            engine.apply_many(step)
        rows.append((time.process_time() - c1, spark_cpu(spark) - s1, time.perf_counter() - w1,
                     sum(len(b) for b in step), engine.jobs_last_batch))
    engine.close()
    later = rows[1:] or rows
    med = {k: statistics.median(r[j] for r in later) for j, k in enumerate(("driver", "spark", "wall"))}
    return dict(query=query, path=path, events_per_s=sum(r[3] for r in later) / sum(r[2] for r in later),
                jobs=[r[4] for r in rows], walls=[round(r[2] * 1000) for r in rows], first_read_cpu=first[0] * 1000, first_read_wall=first[1] * 1000,
                steps=len(rows), **{k: v * 1000 for k, v in med.items()})


def main(argv=None):
    ap = step_args()
    ap.add_argument("--paths", default="driver,executors")
    a = ap.parse_args(argv)
    from toaster.backends.spark.session import get_spark
    spark = get_spark()
    print(f"load before: {os.getloadavg()[0]:.1f}; {a.batches} steps of {a.batch} events; medians of steps 2..")
    print(f"{'query':10s} {'path':9s} {'driver CPU':>11s} {'Spark CPU':>10s} {'wall':>8s} {'events/s':>10s} "
          f"{'1st read/plan':>14s}  wall per step (ms)")
    for q, path in itertools.product(a.queries, a.paths.split(",")):
        r = measure(q, a.data, spark, batch=a.batch, batches=a.batches, partitions=a.partitions, path=path)
        print(f"{q:10s} {path:9s} {r['driver']:8.0f} ms {r['spark']:7.0f} ms {r['wall']:5.0f} ms "
              f"{r['events_per_s']:10,.0f} {r['first_read_wall']:8.0f} ms wall  {r['walls']}", flush=True)
        assert set(r["jobs"]) == {1}, r["jobs"]
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
