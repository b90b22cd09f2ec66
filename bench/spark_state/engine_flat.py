"""The chosen design through the real SparkEngine, on the prototypes' workload and meters:
GROUP BY B of one stream (one distributed view keyed by B), 1,000-row batches, state loaded to
20,000 then 200,000 groups.   python -m bench.spark_state.engine_flat
"""
from __future__ import annotations

from bench.spark_state.common import run, spark_session

SQL = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT B, SUM(A) FROM R WHERE A > 2 GROUP BY B;"""


class EngineGroupSum:
    def __init__(self, spark):
        from toaster.backends.spark.engine import SparkEngine
        from toaster.pipeline import compile_sql
        comp = compile_sql(SQL, mode="batch")
        self.engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
        self.types = self.engine.relations["R"].types

    def apply(self, rows):
        from toaster.runtime.batch import Batch
        self.engine.apply(Batch.from_rows("R", self.types, [(3 + int(v * 100), k) for k, v in rows]))


if __name__ == "__main__":
    spark = spark_session()
    run("engine_group_sum", spark, EngineGroupSum)
    spark.stop()
