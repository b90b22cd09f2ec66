"""Run one query over a hand-written stream of logical rows (None = NULL) on a backend and compare
it with DuckDB after every batch, NULL strictly as NULL: the NULL feature tests' common loop."""
from __future__ import annotations

from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.nulls import physical_rows
from toaster.testing import Oracle, compare_results


def batches(comp, stream) -> list:
    """stream: (relation, sign, logical rows) per batch."""
    decls = {d.name: d for d in comp.stage("calc").relations}
    return [Batch.from_rows(rel, decls[rel].types, physical_rows(decls[rel], rows), signs=[sign] * len(rows))
            for rel, sign, rows in stream]


def run_against_duckdb(schema: str, sql: str, stream, backend: str, mode: str) -> list:
    """The result rows after every batch (each equal to DuckDB's, or AssertionError)."""
    comp = compile_sql(schema + sql + ";", mode=mode)
    return check_every_batch(comp, backend, stream, [sql])[0]


def check_every_batch(comp, backend: str, stream, labels) -> list:
    """Run every query of `comp` on `backend` over the stream, each equal to DuckDB's after every
    batch (AssertionError naming labels[i], the backend, the mode and the batch); per query, its
    rows (tuples) after every batch."""
    engine = comp.engine(backend)
    oracle = Oracle(comp.stage("calc").relations)
    seen = [[] for _ in comp.queries]
    try:
        for n, batch in enumerate(batches(comp, stream), start=1):
            engine.apply(batch)
            oracle.apply(batch)
            for i, (q, sql) in enumerate(zip(comp.queries, comp.oracle_sql)):
                got = engine.result(q.name)
                diffs = compare_results(got, oracle.query(sql), strict_nulls=True)
                assert not diffs, f"{labels[i]}\n{backend} {comp.options.mode}, after batch {n}: {diffs}"
                seen[i].append(tuple(tuple(r) for r in got.rows))
    finally:
        oracle.close()
        engine.close()
    return seen


def had_null(history) -> bool:
    """Whether any row after any batch (check_every_batch's per-query list) holds a NULL."""
    return any(None in row for rows in history for row in rows)


def assert_calc_round_trip(calc) -> str:
    """The calc program prints to text that parses back to it; returns the text."""
    from toaster.m3.parser import parse_m3
    text = str(calc)
    back = parse_m3(text)
    assert (back.relations, back.maps, back.queries) == (calc.relations, calc.maps, calc.queries)
    return text
