"""The in-run baseline: DuckDB holding the database, re-evaluating the query after each batch.

    db = DuckReplayer(relations)
    db.apply(batch)               # one INSERT and/or one DELETE statement per batch
    rows = db.query(sql)

A batch's net change per row is applied with one INSERT ... SELECT from the registered numpy
columns (rows repeated by their multiplicity) and one DELETE of that many copies of each deleted
row (matched on all columns, copies told apart by rowid), so the baseline pays DuckDB's own cost
of an update plus a full re-evaluation, and no Python per-row work beyond netting the batch.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from toaster.runtime.batch import Batch, NUMPY_DTYPES
from toaster.testing.oracle import DUCKDB_TYPES, from_duckdb
from toaster.types import DATE


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _from_input(col: str, t) -> str:
    if t == DATE:
        return (f"make_date(CAST({col} // 10000 AS INTEGER), CAST({col} // 100 % 100 AS INTEGER), "
                f"CAST({col} % 100 AS INTEGER))")
    return f"CAST({col} AS {DUCKDB_TYPES[t]})"


class DuckReplayer:
    def __init__(self, relations, threads: int = 1):
        import duckdb
        self.relations = {d.name: d for d in relations}
        self.con = duckdb.connect(":memory:", config={"threads": threads})
        for d in relations:
            cols = ", ".join(f"{_q(c.name)} {DUCKDB_TYPES[c.type]}" for c in d.columns)
            self.con.execute(f"CREATE TABLE {_q(d.name)} ({cols})")

    def apply(self, batch: Batch) -> None:
        d = self.relations[batch.relation.upper()]
        if np.all(batch.signs > 0):
            self._insert(d, batch.columns)
            return
        net: Counter = Counter()
        for sign, row in batch.rows():
            net[row] += sign
        ins = [(r, c) for r, c in net.items() if c > 0]
        dels = [(r, -c) for r, c in net.items() if c < 0]
        if ins:
            self._insert(d, self._columns(d, [r for r, c in ins for _ in range(c)]))
        if dels:
            self._delete(d, dels)

    def _columns(self, d, rows) -> tuple:
        cols = []
        for j, c in enumerate(d.columns):
            a = np.empty(len(rows), dtype=NUMPY_DTYPES[c.type])
            a[:] = [r[j] for r in rows]
            cols.append(a)
        return tuple(cols)

    def _insert(self, d, columns) -> None:
        # one Arrow table (the batch's columns are numpy or Arrow arrays), scanned by DuckDB in place
        table = pa.table({f"c{j}": col if isinstance(col, (pa.Array, pa.ChunkedArray)) else pa.array(col)
                          for j, col in enumerate(columns)})
        self.con.register("__bench_in", table)
        try:
            exprs = ", ".join(_from_input(f"c{j}", c.type) for j, c in enumerate(d.columns))
            self.con.execute(f"INSERT INTO {_q(d.name)} SELECT {exprs} FROM __bench_in")
        finally:
            self.con.unregister("__bench_in")

    def _delete(self, d, dels) -> None:
        cols = self._columns(d, [r for r, _ in dels])
        data = {f"c{j}": col for j, col in enumerate(cols)}
        data["cnt"] = np.array([c for _, c in dels], dtype=np.int64)
        self.con.register("__bench_del", data)
        try:
            exprs = ", ".join(f"{_from_input(f'c{j}', c.type)} AS {_q(c.name)}" for j, c in enumerate(d.columns))
            on = " AND ".join(f"t.{_q(c.name)} = x.{_q(c.name)}" for c in d.columns)
            part = ", ".join(f"t.{_q(c.name)}" for c in d.columns)
            self.con.execute(
                f"DELETE FROM {_q(d.name)} WHERE rowid IN ("
                f"SELECT rid FROM (SELECT t.rowid AS rid, x.cnt AS cnt, "
                f"row_number() OVER (PARTITION BY {part}) AS rn "
                f"FROM {_q(d.name)} t JOIN (SELECT {exprs}, cnt FROM __bench_del) x ON {on}) "
                f"WHERE rn <= cnt)")
        finally:
            self.con.unregister("__bench_del")

    def query(self, sql: str) -> list[tuple]:
        return [tuple(from_duckdb(v) for v in r) for r in self.con.execute(sql).fetchall()]

    def run(self, sql: str) -> None:
        """Re-evaluate and fetch the result (the baseline's refresh)."""
        self.con.execute(sql).fetchall()

    def count(self, relation: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {_q(relation)}").fetchone()[0]

    def close(self) -> None:
        self.con.close()
