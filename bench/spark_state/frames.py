"""The spark engine's two ways to take a batch from files, side by side (issue 10 item 4):

* driver:    toaster's Arrow CSV reader on the driver, then `apply_many` (what `--run` does:
             the columns travel to the executors as Arrow IPC slices);
* frames:    `spark.read.csv` of the same files (file_frames.csv_frame), then `apply_frames`:
             the executors read, check and pre-aggregate the relations with input blocks.

    python -m bench.spark_state.frames tpch_q3 tpch_q6 tpch_q17 --data DIR --batch 100000 --batches 6

DIR is a bench stream directory (`bench-results/data/tpch-sf0.1-seed1-...`, made by any
`python -m bench --scale 0.1` run). The stream's first `batches` steps of `batch` events (the
bench's steps: the next events in `seq` order, a Batch per relation) are written once as CSV
files (`DIR/frames-b<batch>/step-<k>/<relation>.csv`, the stream's own lines), and both paths
read those files, so each pays for its reading. Per path and query: the median, over steps
2.. (step 1 pays the executors' JIT), of the driver's CPU (time.process_time), Spark's CPU (JVM
and Python workers, /proc), wall time, and events per second (events / wall), with the jobs per
step.
"""
from __future__ import annotations

import heapq
import json
import os
import statistics
import time
from dataclasses import replace

from bench.spark_state.common import spark_cpu, step_args


def write_steps(data: str, relations, batch: int, batches: int) -> list:
    """[{relation: CSV path}] per step: the stream's first batches * batch events in seq order,
    cut into steps of `batch` (written once, reused)."""
    root = os.path.join(data, f"frames-b{batch}")
    done = os.path.join(root, f"done-{batches}")
    steps = [{r: os.path.join(root, f"step-{k:03d}", r.lower() + ".csv") for r in relations} for k in range(batches)]
    if os.path.exists(done):
        return steps
    files = {r: open(os.path.join(data, r.lower() + ".csv"), encoding="utf-8") for r in relations}
    lines = heapq.merge(*[_keyed(r, f) for r, f in files.items()])
    out = None
    for i, (_, r, line) in enumerate(lines):
        if i == batch * batches:
            break
        if i % batch == 0:
            for fh in (out or {}).values():
                fh.close()
            os.makedirs(os.path.dirname(steps[i // batch][r]), exist_ok=True)
            out = {q: open(p, "w", encoding="utf-8") for q, p in steps[i // batch].items()}
        out[r].write(line)
    for fh in list((out or {}).values()) + list(files.values()):
        fh.close()
    open(done, "w").close()
    return steps


def _keyed(relation: str, lines):
    """(seq, relation, line) of a stream file's lines (`seq|op|...`)."""
    for line in lines:
        yield int(line.split("|", 1)[0]), relation, line


def measure(query: str, data: str, spark, *, batch: int, batches: int, partitions: int, path: str) -> dict:
    from bench.harness import find_query
    from bench.stream import load_event_stream
    from bench.tpch import StreamInfo
    from toaster.backends.spark.engine import SparkEngine
    from toaster.backends.spark.file_frames import csv_frame
    from toaster.pipeline import compile_sql
    from toaster.runtime.csv_source import read_source

    with open(os.path.join(data, "manifest.json")) as f:
        si = StreamInfo(**json.load(f))
    comp = compile_sql(si.schema_sql() + "\n" + find_query(query).text, mode="batch")
    decls = {r.name: r for r in comp.m3.relations}
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=partitions)
    for b in load_event_stream(si.schema_sql()).tables:
        if b.relation in decls:
            engine.apply(b)
    streams = [r for r in decls if decls[r].kind != "table" and r in engine.program.TRIGGERS]
    steps = write_steps(data, [r for r in decls if decls[r].kind != "table"], batch, batches)
    rows = []
    for files in steps:
        c0, s0, w0 = time.process_time(), spark_cpu(spark), time.perf_counter()
        if path == "frames":
            engine.apply_frames({r: csv_frame(spark, files[r]) for r in streams}, empty_strings=True)
        else:
            engine.apply_many([b for r in streams for b in read_source(
                replace(decls[r], source=replace(decls[r].source, path=files[r])),
                columns=engine.columns_needed(r))])
        rows.append((time.process_time() - c0, spark_cpu(spark) - s0, time.perf_counter() - w0, engine.jobs_last_batch))
    engine.close()
    later = rows[1:] or rows
    med = {k: statistics.median(r[j] for r in later) for j, k in enumerate(("driver", "spark", "wall"))}
    return dict(query=query, path=path, events_per_s=batch * len(later) / sum(r[2] for r in later),
                jobs=[r[3] for r in rows], **{k: v * 1000 for k, v in med.items()})


def main(argv=None):
    ap = step_args()
    a = ap.parse_args(argv)
    from toaster.backends.spark.session import get_spark
    spark = get_spark()
    print(f"load before: {os.getloadavg()[0]:.1f}; {a.batches} steps of {a.batch} events; medians of steps 2..")
    print(f"{'query':10s} {'path':7s} {'driver CPU':>11s} {'Spark CPU':>10s} {'wall':>8s} {'events/s':>10s}  jobs per step")
    for q in a.queries:
        for path in ("driver", "frames"):
            r = measure(q, a.data, spark, batch=a.batch, batches=a.batches, partitions=a.partitions, path=path)
            print(f"{q:10s} {path:7s} {r['driver']:8.0f} ms {r['spark']:7.0f} ms {r['wall']:5.0f} ms "
                  f"{r['events_per_s']:10,.0f}  {r['jobs']}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
