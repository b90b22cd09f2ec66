"""SparkEngine on a TPC-H stream: jobs per batch, flatness of per-batch cost, plan size.

    python -m bench.spark_state.engine_run tpch_q3 --batch 1000 --batches 120 [--check]

Cuts the scale-0.01 TPC-H stream of bench/ into batches, applies them in order and reports,
for the first and last windows of `--window` batches: median driver CPU (time.process_time),
Spark-side CPU (JVM + Python workers, from /proc) and wall time per batch, their ratio
(last / first: the state grew in between), Spark jobs per batch (status tracker job ids) and
the size of the last job's RDD debug string. --check compares the views with DuckDB at the end.
"""
from __future__ import annotations

import argparse
import statistics
import time

from bench.harness import find_query
from bench.spark_state.common import spark_cpu
from bench.stream import load_event_stream
from bench.tpch import generate_tpch_stream


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("query")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--checkpoint-every", type=int, default=50)
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    from toaster.backends.spark.engine import SparkEngine
    from toaster.backends.spark.session import get_spark
    from toaster.pipeline import compile_sql

    si = generate_tpch_stream(f"/tmp/toaster-spark-bench/tpch-sf{a.scale}", scale=a.scale)
    es = load_event_stream(si.schema_sql())
    q = find_query(a.query)
    comp = compile_sql(si.schema_sql() + "\n" + q.text, mode="batch")
    spark = get_spark()
    names = {r.name for r in comp.m3.relations}
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=a.partitions,
                         checkpoint_every=a.checkpoint_every)
    for b in es.tables:
        if b.relation in names:
            engine.apply(b)
    groups = es.batches(a.batch, relations=sorted(names & set(es.stream_names)),
                        limit=a.batch * a.batches)
    rows = []
    for i, group in enumerate(groups):
        c0, s0, w0 = time.process_time(), spark_cpu(spark), time.perf_counter()
        jobs = 0
        for b in group:
            engine.apply(b)
            jobs += engine.jobs_last_batch
        rows.append((time.process_time() - c0, spark_cpu(spark) - s0, time.perf_counter() - w0, jobs, len(group)))
    w = a.window
    first, last = rows[1:1 + w], rows[-w:]
    print(f"{a.query}: {len(rows)} batches of {a.batch} events, partitions {a.partitions}, "
          f"checkpoint every {a.checkpoint_every} triggers")
    for j, label in enumerate(("driver_cpu", "spark_cpu", "wall")):
        x, y = statistics.median(r[j] for r in first), statistics.median(r[j] for r in last)
        print(f"  {label:10s} batches 2-{w + 1}: {x * 1000:8.1f} ms   last {w}: {y * 1000:8.1f} ms   ratio {y / max(x, 1e-9):5.2f}")
    print(f"  jobs per batch (each batch = one trigger per relation in it): "
          f"min {min(r[3] for r in rows)} max {max(r[3] for r in rows)}; jobs per trigger "
          f"{sum(r[3] for r in rows) / sum(r[4] for r in rows):.2f}")
    sizes = {m.name: len(engine.read_map(m.name)) for m in comp.m3.maps}
    print(f"  map sizes at the end: {sizes}")
    if a.check:
        from toaster.testing import Oracle, compare_results
        oracle = Oracle(comp.m3.relations)
        for b in es.tables:
            if b.relation in names:
                oracle.apply(b)
        for group in groups:
            for b in group:
                oracle.apply(b)
        for qq, sql_q in zip(comp.queries, comp.oracle_sql):
            diffs = compare_results(engine.result(qq.name), oracle.query(sql_q), len(qq.key_columns))
            print(f"  {qq.name}: {'equal to DuckDB' if not diffs else 'DIFFERS: ' + str(diffs[:3])}")
    engine.close()


if __name__ == "__main__":
    main()
