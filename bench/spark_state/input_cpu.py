"""Per-batch CPU of the spark engine on the bench's TPC-H stream, fed as the bench feeds it
(`apply_many`: one step = a Batch per relation), for issue 10 item 4 (batch input).

    python -m bench.spark_state.input_cpu tpch_q3 --data DIR --batch 100000 --batches 6

DIR is a bench stream directory (`bench-results/data/tpch-sf0.1-seed1-...`, made by any
`python -m bench --scale 0.1` run). Prints, per batch after the first (the first pays the
executors' JIT), the median driver CPU (time.process_time), Spark CPU (JVM + Python workers,
from /proc) and wall time, and the jobs and stages per batch.
"""
from __future__ import annotations

import argparse
import statistics
import time

from bench.spark_state.common import spark_cpu, tpch_engine_and_batches


def _pass_options(a) -> dict:
    out = {"dist_to_spark": {"driver_native": False}} if a.python_driver_blocks else {}
    for item in a.pass_option:
        key, _, value = item.partition("=")
        pass_name, _, opt = key.partition(".")
        out.setdefault(pass_name, {})[opt] = {"true": True, "false": False}.get(value.lower(), value)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("query")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, default=100000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--native-opt", type=int, default=None, help="LLVM opt level of the partition program")
    ap.add_argument("--python-driver-blocks", action="store_true",
                    help="the driver's local blocks as generated Python (dist_to_spark{driver_native=false}): the A/B")
    ap.add_argument("--pass-option", action="append", default=[], metavar="PASS.OPT=VALUE",
                    help="a pass option, e.g. m3_to_dist.scalar_broadcast=false (the A/B of a plan choice)")
    a = ap.parse_args(argv)
    from toaster.backends.spark.session import get_spark

    spark = get_spark()
    from toaster.backends.spark.engine import SparkEngine
    made = []
    real_init = SparkEngine.__init__

    def timed_init(self, *args, **kw):      # the engine's start (its warm-up job) timed
        s0, w0 = spark_cpu(spark), time.perf_counter()
        real_init(self, *args, **kw)
        made.append((time.perf_counter() - w0, spark_cpu(spark) - s0))
    SparkEngine.__init__ = timed_init
    engine, groups = tpch_engine_and_batches(a.query, a.data, spark, batch=a.batch, batches=a.batches,
                                             partitions=a.partitions,
                                             pass_options=_pass_options(a) or None,
                                             **({} if a.native_opt is None else {"native_opt": a.native_opt}))
    SparkEngine.__init__ = real_init
    start, start_spark = made[0]
    rows = []
    for group in groups:
        c0, s0, w0 = time.process_time(), spark_cpu(spark), time.perf_counter()
        engine.apply_many(group)
        rows.append((time.process_time() - c0, spark_cpu(spark) - s0, time.perf_counter() - w0,
                     engine.jobs_last_batch, engine.stages_last_batch))
    later = rows[1:] or rows
    med = {k: statistics.median(r[j] for r in later) for j, k in enumerate(("driver", "spark", "wall"))}
    print(f"{a.query}: {len(rows)} batches of {a.batch} events; batches 2..: median driver CPU "
          f"{med['driver'] * 1000:.0f} ms, Spark CPU {med['spark'] * 1000:.0f} ms, wall {med['wall'] * 1000:.0f} ms; "
          f"first batch driver {rows[0][0] * 1000:.0f} ms, Spark {rows[0][1] * 1000:.0f} ms, "
          f"wall {rows[0][2] * 1000:.0f} ms; engine start (warm-up job) wall {start * 1000:.0f} ms, "
          f"Spark {start_spark * 1000:.0f} ms; "
          f"jobs/stages per batch {[(r[3], r[4]) for r in rows]}")
    engine.close()


if __name__ == "__main__":
    main()
