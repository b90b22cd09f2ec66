"""The state designs measured for docs/spark-engine.md (run: python -m bench.spark_state.candidates NAME).

rdd_dicts  today's runtime: an RDD holding one dict per partition; each batch zips the batch
           in, copies the dict, updates it, persists the new RDD and unpersists the old one
           (lineage cut by a local checkpoint every 10 batches).
df_sql     views as DataFrames maintained by Spark SQL: new = (view UNION ALL batch) GROUP BY
           key, read = batch JOIN view; the lineage cut every batch by an eager localCheckpoint.
resident   executor-resident dicts in the Python worker processes with a versioned delta log
           in a shared directory: a task finds its replica at the expected version (or catches
           up from the log), updates it in place, appends its delta; one job per batch.
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
import zlib

from bench.spark_state.common import run, spark_session

P = 2


def _part(k):
    return zlib.crc32(str(k).encode()) % P


def _buckets(rows):
    out = [[] for _ in range(P)]
    for k, v in rows:
        out[_part(k)].append((k, v))
    return out


class RddDicts:
    def __init__(self, spark):
        self.sc = spark.sparkContext
        self.rdd = self.sc.parallelize([{} for _ in range(P)], P).persist()
        self.n = 0

    def apply(self, rows):
        def upd(pair):
            d, rows = pair
            d = dict(d)
            s = 0.0
            for k, v in rows:
                s += d.get(k, 0.0)
                d[k] = d.get(k, 0.0) + v
            return d, s
        out = self.rdd.zip(self.sc.parallelize(_buckets(rows), P)).map(upd).persist()
        new = out.map(lambda p: p[0]).persist()
        self.n += 1
        if self.n % 10 == 0:
            new.localCheckpoint()
        total = sum(out.map(lambda p: p[1]).collect())
        new.count()
        self.rdd.unpersist()
        out.unpersist()
        self.rdd = new
        return total


class DfSql:
    def __init__(self, spark):
        self.spark = spark
        self.view = spark.createDataFrame([], "k long, v double")

    def apply(self, rows):
        from pyspark.sql import functions as F
        b = self.spark.createDataFrame(rows, "k long, v double")
        total = b.join(self.view.withColumnRenamed("v", "w"), "k").agg(F.sum("w")).collect()[0][0]
        self.view = (self.view.unionByName(b).groupBy("k").agg(F.sum("v").alias("v"))
                     .localCheckpoint(eager=True))
        return total or 0.0


def _resident_task(log_dir, version):
    """mapPartitionsWithIndex body: the replica lives in a module kept in sys.modules."""
    def task(p, it):
        store = sys.modules.setdefault("_proto_state", type(sys)("_proto_state")).__dict__
        rep = store.get(p)
        if rep is None or rep[0] > version - 1:          # cold process or a retry: rebuild
            rep = [0, {}]
        d = rep[1]
        for v in range(rep[0] + 1, version):               # catch up on versions other processes wrote
            with open(f"{log_dir}/{p}-{v}", "rb") as f:
                for k, x in pickle.load(f):
                    d[k] = x
        rep[0] = -1                                         # dirty while mutating
        s, touched = 0.0, {}
        for rows in it:
            for k, v in rows:
                old = d.get(k, 0.0)
                s += old
                d[k] = touched[k] = old + v
        tmp = f"{log_dir}/.{p}-{version}.{os.getpid()}"
        with open(tmp, "wb") as f:
            pickle.dump(list(touched.items()), f, protocol=5)
        os.replace(tmp, f"{log_dir}/{p}-{version}")        # atomic: a retried task rewrites the same version
        rep[0] = version
        store[p] = rep
        yield s
    return task


class Resident:
    def __init__(self, spark):
        self.sc = spark.sparkContext
        self.dir = tempfile.mkdtemp(prefix="toaster-proto-log-")
        self.version = 0

    def apply(self, rows):
        self.version += 1
        rdd = self.sc.parallelize(_buckets(rows), P).mapPartitionsWithIndex(
            _resident_task(self.dir, self.version))
        return sum(rdd.collect())


CANDIDATES = {"rdd_dicts": RddDicts, "df_sql": DfSql, "resident": Resident}

if __name__ == "__main__":
    names = sys.argv[1:] or list(CANDIDATES)
    spark = spark_session()
    for n in names:
        run(n, spark, CANDIDATES[n])
    spark.stop()
