"""Per-batch time of a TPC-H Q17-shaped re-evaluation as its state grows, with and without the
batch domain (toaster.dist.batch_domain; issue 10 item 1).

    python -m bench.spark_state.rescan [--parts 100000] [--batch 25000] [--batches 40]
    python -m bench.spark_state.rescan --tpch DIR --batch 1000000 --batches 2

The query is Q17 without its brand/container filter, so the view the LINEITEM trigger
re-evaluates over (mLINEITEMPART3[pk, qty]) holds every line item's (part, quantity) pair:
the rescan's cost is visible. PART is loaded first (untimed); then `batches` insert-only
LINEITEM batches make the state grow linearly. For each setting (`m3_to_dist{batch_domains=...}`)
per batch: wall ms, Spark-side CPU ms (JVM + Python workers, /proc) and the views' entry count;
at the end the medians of batches 2-4 and of the last 3 batches and their ratio (flat: close
to 1; batch 1 loads the partition program), after an unreported warm-up run of 4 batches. The final view is compared between the two settings (equal, or the run says so).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

SQL = """CREATE STREAM LI(OK int, PK int, QTY float, PRICE float);
CREATE STREAM PART(PK int, BRAND string);
SELECT SUM(L.PRICE) AS AVG_YEARLY FROM LI L, PART P
WHERE P.PK = L.PK AND L.QTY < (SELECT 0.2 * AVG(L2.QTY) FROM LI L2 WHERE L2.PK = P.PK);"""


def _batches(parts: int, batch: int, batches: int, seed: int = 1):
    from toaster.runtime.batch import Batch
    rng = np.random.default_rng(seed)
    pk = np.arange(parts, dtype=np.int64)
    part = Batch("PART", np.ones(parts, np.int8), (pk, pa.array([f"B{k % 25}" for k in range(parts)])))
    out = []
    for i in range(batches):
        ok = np.arange(i * batch, (i + 1) * batch, dtype=np.int64)
        out.append(Batch("LI", np.ones(batch, np.int8),
                         (ok, rng.integers(0, parts, batch), rng.integers(1, 51, batch).astype(np.float64),
                          np.round(rng.random(batch) * 1000, 2))))
    return part, out


def run(domains: bool, part, batches, spark) -> tuple[list, float]:
    from bench.spark_state.common import spark_cpu
    from toaster.backends.spark.engine import SparkEngine
    from toaster.pipeline import compile_sql
    comp = compile_sql(SQL, mode="batch", pass_options={"m3_to_dist": {"batch_domains": domains}})
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    engine.apply(part)
    rows = []
    for i, b in enumerate(batches):
        c0, t0 = spark_cpu(spark), time.perf_counter()
        engine.apply(b)
        wall, cpu = time.perf_counter() - t0, spark_cpu(spark) - c0
        rows.append((i + 1, (i + 1) * len(b), wall * 1000, cpu * 1000, engine.jobs_last_batch,
                     engine.stages_last_batch))
        print(f"batch_domains={domains} batch {i + 1}: {(i + 1) * len(b):,} line items, wall {wall * 1000:.0f} ms, "
              f"Spark CPU {cpu * 1000:.0f} ms, {engine.jobs_last_batch} job(s) {engine.stages_last_batch} stage(s)",
              flush=True)
    value = engine.result(comp.queries[0].name)
    engine.close()
    return rows, value


def tpch_ab(data: str, batch: int, batches: int, spark) -> None:
    """TPC-H Q17 itself over a bench stream (`--tpch DIR`): the same batches with the batch
    domain off and on, per batch wall and Spark CPU, and the final view of each."""
    import json
    import os
    from bench.harness import find_query
    from bench.spark_state.common import spark_cpu
    from bench.stream import load_event_stream
    from bench.tpch import StreamInfo
    from toaster.backends.spark.engine import SparkEngine
    from toaster.pipeline import compile_sql
    with open(os.path.join(data, "manifest.json")) as f:
        si = StreamInfo(**json.load(f))
    es = load_event_stream(si.schema_sql())
    for domains in (False, True):
        comp = compile_sql(si.schema_sql() + "\n" + find_query("tpch_q17").text, mode="batch",
                           pass_options={"m3_to_dist": {"batch_domains": domains}})
        names = {r.name for r in comp.m3.relations}
        engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
        for b in es.tables:
            if b.relation in names:
                engine.apply(b)
        cells = []
        for group in es.batches(batch, relations=sorted(names & set(es.stream_names)), limit=batch * batches):
            c0, t0 = spark_cpu(spark), time.perf_counter()
            engine.apply_many(group)
            cells.append(f"wall {time.perf_counter() - t0:.2f} s, Spark CPU {spark_cpu(spark) - c0:.2f} s")
        print(f"tpch_q17 batch_domains={domains}: " + "; ".join(cells),
              engine.result(comp.queries[0].name).rows, flush=True)
        engine.close()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpch", metavar="DIR", help="instead: TPC-H Q17 over this bench stream, domain off and on")
    ap.add_argument("--parts", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=25_000)
    ap.add_argument("--batches", type=int, default=40)
    a = ap.parse_args(argv)
    from toaster.backends.spark.session import get_spark
    spark = get_spark()
    if a.tpch:
        return tpch_ab(a.tpch, a.batch, a.batches, spark)
    part, batches = _batches(a.parts, a.batch, a.batches)
    q = 3
    results = {}
    run(True, part, batches[:4], spark)         # warm-up (the JVM's JIT, the workers): not reported
    for domains in (True, False):
        rows, value = run(domains, part, batches, spark)
        results[domains] = value
        for col, name in ((2, "wall"), (3, "Spark CPU")):
            first = statistics.median(r[col] for r in rows[1:q + 1])     # batch 1 loads the program
            last = statistics.median(r[col] for r in rows[-q:])
            print(f"batch_domains={domains}: median {name} per batch, batches 2-{q + 1} {first:.0f} ms, "
                  f"last {q} {last:.0f} ms: x{last / first:.2f} while the state grew "
                  f"x{rows[-1][1] / rows[q][1]:.1f}")
    print("final views equal:", results[True] == results[False] or (results[True], results[False]))


if __name__ == "__main__":
    main()
