"""The Spark SQL baseline: Spark holding the database, re-evaluating the query after each batch.

    db = SparkReplayer(relations, spark)
    db.apply(batch)               # ingest: one DataFrame from the batch's Arrow columns
    rows = db.query(spark_sql(oracle_sql))

Each relation is a DataFrame of its distinct-or-not rows with a positive copy count `__cnt`
(kept in memory by Spark: each appended batch and each re-aggregation is checkpointed locally, so
lineage stays short), and
the query reads a temp view of the relation's name that expands every row into `__cnt` copies.
An insert-only batch is appended (a union); a batch with deletions is appended with negative
counts and the relation is re-aggregated (group by every column, keep counts > 0), so deletes
are honoured as multiset differences. Ingest and the query (collected to the driver) are both
timed, in the same evenly spread windows as the DuckDB baseline.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict

import numpy as np
import pyarrow as pa

from toaster.errors import UnsupportedError
from toaster.runtime.batch import Batch
from toaster.backends.spark.runtime import last_job_id
from toaster.types import INT, FLOAT, DATE, STRING, BOOL

SPARK_TYPES = {INT: "BIGINT", FLOAT: "DOUBLE", DATE: "DATE", STRING: "STRING", BOOL: "BOOLEAN"}
# re-aggregate an insert-only relation after this many appended batches (bounds its partitions
# and its lineage)
COMPACT_EVERY = 16
_TOKENS = re.compile(r"('(?:[^']|'')*')|\"((?:[^\"]|\"\")*)\"")


def spark_sql(duckdb_sql: str) -> str:
    """The oracle's DuckDB SQL in Spark SQL's dialect. The oracle text differs from Spark only in
    its quoted identifiers ("X" -> `X`); string literals are kept as they are."""
    def swap(m):
        if m.group(1) is not None:
            return m.group(1)
        return "`" + m.group(2).replace('""', '"').replace("`", "``") + "`"
    return _TOKENS.sub(swap, duckdb_sql)


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _from_input(col: str, t) -> str:
    if t == DATE:        # runtime dates are YYYYMMDD ints
        return (f"make_date(CAST({col} DIV 10000 AS INT), CAST({col} DIV 100 % 100 AS INT), "
                f"CAST({col} % 100 AS INT))")
    return f"CAST({col} AS {SPARK_TYPES[t]})"


def job_count_since(sc, job0: int) -> tuple[int, int, int]:
    """(jobs, stages run, last job id) of the jobs after job id `job0` (stages skipped because
    their shuffle output was reused are not counted)."""
    ids = [j for j in sc.statusTracker().getJobIdsForGroup(None) if j > job0]
    stages = 0
    for j in ids:
        info = sc.statusTracker().getJobInfo(j)
        for s in (info.stageIds if info is not None else ()):
            st = sc.statusTracker().getStageInfo(s)
            if st is not None and st.numCompletedTasks > 0:
                stages += 1
    return len(ids), stages, max(ids, default=job0)


class SparkReplayer:
    def __init__(self, relations, spark):
        self.spark = spark
        self.relations = {d.name: d for d in relations}
        self.state: dict = {}
        self.appended: dict = {}
        for d in relations:
            cols = ", ".join(f"{_q(c.name)} {SPARK_TYPES[c.type]}" for c in d.columns)
            self.state[d.name] = spark.createDataFrame([], f"{cols}, __cnt BIGINT")
            self.appended[d.name] = 0
            self._publish(d)

    def apply(self, batch: Batch) -> None:
        d = self.relations[batch.relation.upper()]
        if any(c is None for c in batch.columns):
            raise UnsupportedError(f"Spark SQL baseline: batch of {d.name} without all its columns")
        data = {f"c{j}": col if isinstance(col, (pa.Array, pa.ChunkedArray)) else pa.array(col)
                for j, col in enumerate(batch.columns)}
        data["s"] = pa.array(np.asarray(batch.signs, dtype=np.int64))
        exprs = [f"{_from_input(f'c{j}', c.type)} AS {_q(c.name)}" for j, c in enumerate(d.columns)]
        delta = self.spark.createDataFrame(pa.table(data)).selectExpr(*exprs, "s AS __cnt")
        self.appended[d.name] += 1
        if np.any(batch.signs < 0) or self.appended[d.name] >= COMPACT_EVERY:
            names = [_q(c.name) for c in d.columns]
            merged = self.state[d.name].unionAll(delta).groupBy(*names).agg({"__cnt": "sum"}) \
                .withColumnRenamed("sum(__cnt)", "__cnt").where("__cnt > 0")
            self.state[d.name] = merged.localCheckpoint(eager=True)
            self.appended[d.name] = 0
        else:                 # an append: only the new rows are materialized
            self.state[d.name] = self.state[d.name].unionAll(delta.localCheckpoint(eager=True))
        self._publish(d)

    def _publish(self, d) -> None:
        """The relation's temp view: every row repeated __cnt times."""
        names = [_q(c.name) for c in d.columns]
        self.state[d.name].selectExpr(*names, "explode(sequence(1, __cnt)) AS __copy") \
            .drop("__copy").createOrReplaceTempView(d.name)

    def run(self, sql: str) -> list:
        return self.spark.sql(sql).collect()

    def close(self) -> None:
        for d in self.relations:
            self.spark.catalog.dropTempView(d)
        self.state.clear()


def _spark_rows(rows) -> list[tuple]:
    from toaster.testing.oracle import from_duckdb      # dates and decimals in toaster's runtime form
    return [tuple(from_duckdb(v) for v in r) for r in rows]


def check_spark_results(spark_rows: list, expected: list, queries) -> str | None:
    """None if Spark SQL's answers equal DuckDB's, else a one-line description of the first difference."""
    from toaster.engine import ResultTable
    from toaster.testing import compare_results
    for q, got, want in zip(queries, spark_rows, expected):
        cols = tuple(q.key_columns) + tuple(q.value_columns)
        table = ResultTable(q.name, tuple(c.name for c in cols), tuple(c.type for c in cols),
                            len(q.key_columns), tuple(_spark_rows(got)))
        diffs = compare_results(table, want, len(q.key_columns))
        if diffs:
            return f"{q.name}: {len(diffs)} differing key(s), e.g. {diffs[0]}"
    return None


def run_sparksql(relations, oracle_sql, queries, batches: list, tables: list, expected, base, time_limit: float,
                 windows: int = 5, master: str | None = None, progress: bool = False):
    """The Spark SQL baseline: re-run the query after every batch (ingest + query + collect),
    timed in evenly spread windows; the final answer is checked against DuckDB's."""
    from bench.harness import RunResult, _progress, replay_windows
    from bench.limits import RunTimeout, deadline, hard_limit
    from toaster.backends.spark.session import get_spark
    res = RunResult(**{**asdict(base), "backend": "sparksql", "strategy": "reeval", "mode": "batch"})
    db = None
    try:
        with deadline(hard_limit(time_limit)):
            t0 = time.perf_counter()
            spark = get_spark(master)
            sqls = [spark_sql(s) for s in oracle_sql]
            db = SparkReplayer(relations, spark)
            res.compile_s = time.perf_counter() - t0
            for b in tables:
                db.apply(b)
            try:
                for s in sqls:           # the query must be Spark SQL before anything is timed
                    spark.sql(s)
            except Exception as e:
                raise UnsupportedError(f"unsupported: Spark SQL rejects the query: "
                                       f"{str(e).strip().splitlines()[0][:160]}") from None
            sc = spark.sparkContext
            counts = {"jobs": 0, "stages": 0, "batches": 0}

            def counting_jobs(group, step):
                job0 = last_job_id(sc)
                spent = step(group)
                j, st, _ = job_count_since(sc, job0)      # read outside the timed call
                counts["jobs"] += j
                counts["stages"] += st
                counts["batches"] += 1
                return spent
            bar = _progress(res.stream_events, f"{res.query} sparksql bs={res.batch_size}", progress)
            events, timed, applied, windows = replay_windows(db, sqls, batches, windows, time_limit, bar,
                                                             around=counting_jobs)
            jobs, stages, timed_batches = counts["jobs"], counts["stages"], counts["batches"]
            res.events, res.maint_s = events, timed
            if timed_batches:
                res.spark_jobs, res.spark_stages = jobs / timed_batches, stages / timed_batches
            final = [db.run(s) for s in sqls]
        problem = check_spark_results(final, expected(applied), queries)
        if problem is not None:
            res.status, res.note = "WRONG", problem
            return res
        res.rate = events / timed if timed > 0 else None
        if events < res.stream_events:
            res.note = f"sampled: {events}/{res.stream_events} events in {windows} windows"
    except UnsupportedError as e:
        res.status, res.note = "UNSUPPORTED", str(e).splitlines()[0][:200]
    except RunTimeout as e:
        res.status, res.note = "TIMEOUT", str(e)
    except Exception as e:
        res.status, res.note = "ERROR", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    finally:
        _finish(db, res)
    return res


def _finish(db, res) -> None:
    """Drop the baseline's views; if Spark's JVM died or its context stopped during the run (out
    of driver memory: the JVM exits, see session.py), say so in the row and discard the session,
    so the next run starts a fresh JVM instead of calling (or hanging on) a dead one."""
    from toaster.backends.spark.session import discard_session, spark_alive, DRIVER_MEMORY_ENV
    if db is None:
        return
    if not spark_alive():
        discard_session()
        if res.status in ("OK", "ERROR"):
            res.status = "ERROR"
            res.note = (f"Spark's JVM died or its context stopped (out of driver memory? set "
                        f"{DRIVER_MEMORY_ENV}); {res.note or ''}")[:300]
        return
    try:
        db.close()
    except Exception:
        pass
