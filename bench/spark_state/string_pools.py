"""The string pools of the spark engine's native programs over a stream of ever-new strings
(docs/spark-engine.md, "String pools are collected").

    python -m bench.spark_state.string_pools --batches 200 --rows 50 --every 20

Each step inserts `--rows` R rows whose NAME no earlier step used and deletes the previous
step's rows, so the database never holds more than 2 x rows distinct names; every tenth step
also changes S. The query (STRINGS) keeps NAME in distributed views (the executors' pools)
and its R trigger joins the batch on the driver (a driver block: the driver's pool). Prints,
every `--every` steps, the dictionary slots / live strings / collections of the driver's
program and of each worker process's partition program (native_exec.pool_sizes).
`--collect-min` lowers the pools' collection threshold (StringPool.COLLECT_MIN) for the run.
"""
from __future__ import annotations

import argparse
import time

STRINGS = """CREATE STREAM R(A int, NAME string, V int) FROM FILE 'r.csv' LINE DELIMITED csv;
CREATE STREAM S(B int, C int) FROM FILE 's.csv' LINE DELIMITED csv;
SELECT R.NAME, COUNT(*) AS N, SUM(R.V) AS TOTAL FROM R
WHERE R.A > (SELECT SUM(S.C) FROM S WHERE S.C > 3) GROUP BY R.NAME;"""


def stream(steps: int, rows: int, seed: int = 7):
    """[(step's Batches)]: R rows with new names, the previous step's deleted; S now and then."""
    import random

    from toaster.runtime.batch import Batch
    from toaster.types import INT, STRING
    rng = random.Random(seed)
    out, prev = [], []
    for i in range(steps):
        new = [(rng.randrange(10), f"name-{i}-{j}-{rng.randrange(10 ** 6)}", rng.randrange(100))
               for j in range(rows)]
        step = [Batch.from_rows("R", (INT, STRING, INT), prev + new, [-1] * len(prev) + [1] * len(new))]
        if i % 10 == 0:
            step.append(Batch.from_rows("S", (INT, INT), [(i, 4 + i % 2)], [1]))
        out.append(step)
        prev = new
    return out


def pools(spark) -> tuple:
    """(driver's pools, {worker pid: pools}) as native_exec.pool_sizes gives them."""
    from toaster.backends.spark import native_exec, native_state
    workers = dict(spark.sparkContext.parallelize(range(8), 8).mapPartitionsWithIndex(
        native_state.pools_task()).collect())
    return native_exec.pool_sizes(), workers


def _fmt(sizes, key) -> str:
    got = [f"{slots}/{live}/{coll}" for k, slots, live, coll in sizes if k == key]
    return got[0] if got else "-"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--collect-min", type=int, default=None)
    ap.add_argument("--check", action="store_true", help="compare with DuckDB after every step")
    a = ap.parse_args(argv)
    from toaster.backends.spark.engine import SparkEngine
    from toaster.backends.spark.session import get_spark
    from toaster.pipeline import compile_sql
    from toaster.testing import Oracle, compare_results
    spark = get_spark()
    comp = compile_sql(STRINGS, mode="batch")
    prog = comp.stage("spark")
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=50)
    if a.collect_min is not None:
        engine.program._native_spec["collect_min"] = a.collect_min
    key, dkey = prog.native.key, (prog.native.driver_program or prog.native).key
    oracle = Oracle(comp.m3.relations) if a.check else None
    print("step  driver slots/live/collections  workers (pid: slots/live/collections)  wall s")
    t0 = time.perf_counter()
    try:
        for i, step in enumerate(stream(a.batches, a.rows), start=1):
            engine.apply_many(step)
            if oracle is not None:
                for b in step:
                    oracle.apply(b)
                for q, sql_q in zip(comp.queries, comp.oracle_sql):
                    assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
            if i % a.every == 0 or i == a.batches:
                driver, workers = pools(spark)
                w = "  ".join(f"{pid}: {_fmt(s, key)}" for pid, s in sorted(workers.items()))
                print(f"{i:4d}  {_fmt(driver, dkey):>28}  {w}  {time.perf_counter() - t0:.1f}", flush=True)
    finally:
        engine.close()
        if oracle is not None:
            oracle.close()


if __name__ == "__main__":
    main()
