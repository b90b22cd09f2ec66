"""Candidate 'tws': Spark's keyed state store (transformWithStateInPandas, RocksDB provider).

One grouping key per partition bucket; the map's entries live in a MapState (RocksDB) under
that bucket, so a batch touches only its own keys. Input arrives as a streaming file source
(one JSON file per batch, `processAllAvailable()` per batch); the read-sum of each batch is
returned through foreachBatch. Needs pandas, pyarrow and protobuf (not toaster dependencies):
run with an interpreter that has them, e.g. a venv with --system-site-packages.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

from bench.spark_state.common import run, spark_session

P = 2


class TwsState:
    def __init__(self, spark):
        import pandas as pd
        from pyspark.sql.streaming.stateful_processor import StatefulProcessor

        class Upsert(StatefulProcessor):
            def init(self, handle):
                self.m = handle.getMapState("m", "k long", "v double")

            def handleInputRows(self, key, rows, timerValues):
                s = 0.0
                for pdf in rows:
                    for k, v in zip(pdf["k"].tolist(), pdf["v"].tolist()):
                        old = self.m.getValue((k,))[0] if self.m.containsKey((k,)) else 0.0
                        s += old
                        self.m.updateValue((k,), (old + v,))
                yield pd.DataFrame({"bucket": [key[0]], "s": [s]})

            def close(self):
                pass

        self.spark = spark
        self.dir = tempfile.mkdtemp(prefix="toaster-tws-in-")
        ckpt = tempfile.mkdtemp(prefix="toaster-tws-ckpt-")
        self.n = 0
        self.sums = []
        src = spark.readStream.schema("bucket int, k long, v double").json(self.dir)
        out = src.groupBy("bucket").transformWithStateInPandas(
            Upsert(), outputStructType="bucket int, s double", outputMode="Update", timeMode="None")

        def sink(df, _epoch):
            self.sums.append(sum(r["s"] for r in df.collect()))

        self.query = out.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()

    def apply(self, rows):
        self.n += 1
        tmp = os.path.join(self.dir, f".b{self.n}.json")
        with open(tmp, "w") as f:
            for k, v in rows:
                f.write(json.dumps({"bucket": k % P, "k": k, "v": v}) + "\n")
        os.replace(tmp, os.path.join(self.dir, f"b{self.n:08d}.json"))
        self.query.processAllAvailable()
        return self.sums[-1] if self.sums else 0.0


if __name__ == "__main__":
    spark = spark_session({
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"})
    state = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    run("tws", spark, TwsState, state=state)
    spark.stop()
