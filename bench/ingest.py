"""`python -m bench --ingest`: CSV ingest rate of toaster's reader, per file, against DuckDB.

Reads each stream file of the TPC-H stream (`--scale`, default 0.1; `seq|op|...` lines) the way
`--run` reads it (toaster.runtime.csv_source.iter_source, one batch of the whole file): every
column, and for LINEITEM the columns each of `--queries` (default Q1, Q3, Q6) reads. Lines/s:

* one thread: CPU time (`time.process_time`) with Arrow held to one thread
  (`pa.set_cpu_count(1)`, `set_io_thread_count(1)`, `ReadOptions(use_threads=False)`);
* threads: Arrow's thread pools as configured (cpu count), wall time and CPU time;
* DuckDB: `CREATE TABLE AS SELECT <the same columns> FROM read_csv(...)`, 1 thread, CPU time;
  the ratio is toaster's one-thread rate over DuckDB's.

Medians of `--repeats` (default 3). The machine is shared: the load average is printed with
the table. Writes OUT/ingest.md.
"""
from __future__ import annotations

import os
import statistics
import time

import pyarrow as pa

from toaster.types import DATE, FLOAT, INT, STRING, BOOL

INGEST_QUERIES = ["tpch_q1", "tpch_q3", "tpch_q6"]
_DUCK = {INT: "BIGINT", FLOAT: "DOUBLE", DATE: "DATE", STRING: "VARCHAR", BOOL: "BOOLEAN"}


def read_file(decl, columns=None) -> int:
    """Lines of decl's file read as `--run` reads them (the whole file as one batch)."""
    from toaster.runtime.csv_source import iter_source
    return sum(len(b) for b in iter_source(decl, None, None, columns))


class _Threads:
    """Arrow (and toaster's reader) held to one thread, or left to its thread pools."""

    def __init__(self, single: bool):
        self.single = single

    def __enter__(self):
        from toaster.runtime import arrow_csv
        self._saved = (pa.cpu_count(), pa.io_thread_count(), arrow_csv.USE_THREADS)
        if self.single:
            pa.set_cpu_count(1)
            pa.set_io_thread_count(1)
        arrow_csv.USE_THREADS = not self.single
        return self

    def __exit__(self, *exc):
        from toaster.runtime import arrow_csv
        cpu, io, threads = self._saved
        pa.set_cpu_count(cpu)
        pa.set_io_thread_count(io)
        arrow_csv.USE_THREADS = threads


def _timed(fn, repeats: int) -> tuple[int, float, float]:
    """(result, median CPU seconds, median wall seconds) of fn() run `repeats` times."""
    cpu, wall, out = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return out, statistics.median(cpu), statistics.median(wall)


def duckdb_read(decl, columns=None) -> int:
    """Rows DuckDB (1 thread) loads into a table from decl's file, the same columns."""
    import duckdb
    from toaster.runtime.csv_source import csv_settings
    delim, deletions = csv_settings(decl)
    cols = ({"seq": "BIGINT", "op": "VARCHAR"} if deletions else {})
    cols.update({c.name: _DUCK[c.type] for c in decl.columns})
    keep = (["seq", "op"] if deletions else []) + [c.name for j, c in enumerate(decl.columns)
                                                    if columns is None or columns[j]]
    con = duckdb.connect()
    try:
        con.execute("SET threads TO 1")
        con.execute(f"CREATE TABLE t AS SELECT {', '.join(keep)} FROM read_csv(?, delim=?, header=false, "
                    f"auto_detect=false, quote='', escape='', columns={cols!r})", [decl.source.path, delim])
        return con.execute("SELECT count(*) FROM t").fetchone()[0]
    finally:
        con.close()


def ingest_rows(relations, projections, repeats: int = 3, log=lambda s: None) -> list[dict]:
    """One row per (file, columns): lines and the medians of each way of reading it."""
    rows = []
    cases = [(d, "all", None) for d in relations] + \
        [(d, label, cols) for d in relations for label, (rel, cols) in projections.items() if rel == d.name]
    for d, label, cols in cases:
        log(f"ingest {d.name} ({label})")
        with _Threads(single=True):
            n, cpu1, _ = _timed(lambda: read_file(d, cols), repeats)
        with _Threads(single=False):
            _, cpu_t, wall_t = _timed(lambda: read_file(d, cols), repeats)
        m, duck_cpu, _ = _timed(lambda: duckdb_read(d, cols), repeats)
        if m != n:
            raise AssertionError(f"{d.name}: DuckDB read {m} lines, toaster {n}")
        ncols = len(d.columns) if cols is None else sum(cols)
        rows.append({"file": os.path.basename(d.source.path), "columns": f"{label} ({ncols})", "lines": n,
                     "mb": os.path.getsize(d.source.path) / 2 ** 20, "one_thread_cpu": cpu1,
                     "threads_wall": wall_t, "threads_cpu": cpu_t, "duckdb_cpu": duck_cpu})
    return rows


def ingest_table(rows, command: str, load: tuple, repeats: int) -> str:
    out = [f"CSV ingest, lines/s (medians of {repeats}); "
           f"`{command}`; load average before/after {load[0]:.2f} / {load[1]:.2f} on {os.cpu_count()} CPUs.",
           "One thread: CPU time, Arrow on one thread. Threads: Arrow's pools, wall time (CPU time in "
           "brackets). DuckDB: read_csv into a table, 1 thread, CPU time; ratio = toaster one thread / DuckDB.",
           "", "| file | columns | lines | MB | one thread (M lines/s) | threads, wall (CPU) | DuckDB 1 thread | ratio |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n = r["lines"]
        rate = lambda s: n / s / 1e6 if s > 0 else float("inf")
        out.append(f"| {r['file']} | {r['columns']} | {n:,} | {r['mb']:.0f} | {rate(r['one_thread_cpu']):.2f} | "
                   f"{rate(r['threads_wall']):.2f} ({rate(r['threads_cpu']):.2f}) | {rate(r['duckdb_cpu']):.2f} | "
                   f"{r['duckdb_cpu'] / r['one_thread_cpu']:.2f}x |")
    return "\n".join(out) + "\n"


def run_ingest(args, cfg, command: str) -> int:
    from bench.harness import dataset_stream, find_query
    from toaster.frontend.parser import parse_sql
    from toaster.pipeline import compile_sql
    from toaster.runtime.reads import columns_read
    if args.scale is None:
        cfg.scale = 0.1
    info = dataset_stream("tpch", cfg)
    schema = info.schema_sql()
    relations = [d for d in parse_sql(schema).relations if d.kind == "stream" and d.source is not None]
    lineitem = next(d for d in relations if d.name == "LINEITEM")
    projections = {}
    for name in (args.queries or INGEST_QUERIES):
        q = find_query(name)
        if q.dataset != "tpch":
            continue
        imp = compile_sql(schema + "\n" + q.text).imp
        projections[q.name] = ("LINEITEM", columns_read(imp, "LINEITEM", len(lineitem.columns)))
    load0 = os.getloadavg()[0]
    rows = ingest_rows(relations, projections, args.repeats, log=lambda s: print(s, flush=True))
    report = ingest_table(rows, command, (load0, os.getloadavg()[0]), args.repeats)
    with open(os.path.join(cfg.out, "ingest.md"), "w") as f:
        f.write(report)
    print(report)
    return 0
