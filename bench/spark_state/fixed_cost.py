"""Spark's fixed cost per stage: an empty job of 1 and of 4 stages on local[2], 2 partitions.

    python -m bench.spark_state.fixed_cost [--conf KEY=VALUE ...] [--runs 20] [--warm 30]

The session has toaster's settings (session.session_config()) plus the --conf ones, so a
setting's effect is one command per value (a fresh JVM each: settings are fixed at start).
The job is the shape of a toaster batch with no work: parallelize(2 elements, 2) ->
mapPartitionsWithIndex -> (partitionBy -> mapPartitionsWithIndex) x (stages - 1) -> collect.
Every task drains its input (a PySpark worker that leaves input unread exits instead of being
reused). Printed per shape, after `--warm` unmeasured jobs (the JVM's JIT): wall median and
min, driver CPU (time.process_time) and Spark CPU (the JVM and its Python workers, /proc),
medians, in ms. On a shared machine read CPU, and wall only with the load (uptime) beside it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _session(extra: dict):
    from pyspark.sql import SparkSession
    from toaster.backends.spark import session as S
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.master("local[2]").appName("toaster-fixed-cost")
    for k, v in {**S.session_config(), **extra}.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def _task(p, elements):
    return iter([(1 - p, list(elements))])


def _identity(dest):
    return dest


def empty_job(sc, stages: int):
    rdd = sc.parallelize([(0, []), (1, [])], 2).mapPartitionsWithIndex(_task)
    for _ in range(stages - 1):
        rdd = rdd.partitionBy(2, _identity).mapPartitionsWithIndex(_task)
    return rdd.collect()


def main(argv=None) -> None:
    from bench.spark_state.common import spark_cpu
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conf", action="append", default=[], help="extra Spark setting KEY=VALUE")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warm", type=int, default=30)
    a = ap.parse_args(argv)
    spark = _session(dict(kv.split("=", 1) for kv in a.conf))
    sc = spark.sparkContext
    print(f"settings: {a.conf or 'toaster defaults'}; load {os.getloadavg()[0]:.1f}")
    for stages in (1, 4):
        for _ in range(a.warm):
            empty_job(sc, stages)
        wall, driver, worker = [], [], []
        for _ in range(a.runs):
            t, c, s = time.perf_counter(), time.process_time(), spark_cpu(spark)
            empty_job(sc, stages)
            wall.append(time.perf_counter() - t)
            driver.append(time.process_time() - c)
            worker.append(spark_cpu(spark) - s)
        ms = lambda xs: 1000 * statistics.median(xs)      # noqa: E731
        print(f"{stages} stage(s): wall median {ms(wall):.0f} ms (min {1000 * min(wall):.0f}), "
              f"driver CPU {ms(driver):.0f} ms, Spark CPU {ms(worker):.0f} ms", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
