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
    engine = comp.engine(backend)
    oracle = Oracle(comp.stage("calc").relations)
    seen = []
    try:
        for n, batch in enumerate(batches(comp, stream), start=1):
            engine.apply(batch)
            oracle.apply(batch)
            got = engine.result(comp.queries[0].name)
            diffs = compare_results(got, oracle.query(comp.oracle_sql[0]), strict_nulls=True)
            assert not diffs, f"{backend} {mode}, after batch {n}: {diffs}"
            seen.append(tuple(tuple(r) for r in got.rows))
    finally:
        oracle.close()
        engine.close()
    return seen


def assert_calc_round_trip(calc) -> str:
    """The calc program prints to text that parses back to it; returns the text."""
    from toaster.m3.parser import parse_m3
    text = str(calc)
    back = parse_m3(text)
    assert (back.relations, back.maps, back.queries) == (calc.relations, calc.maps, calc.queries)
    return text
