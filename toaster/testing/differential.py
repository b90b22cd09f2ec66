"""The differential harness: run a query on a backend, feed batches, compare with DuckDB.

    run_differential(sql_text, "llvm", lambda rels: random_stream(rels, seed=1, deletes=True),
                     mode="batch", check_every=1)

compiles with toaster.pipeline.compile_sql(sql_text, mode=mode), builds compilation.engine(backend),
feeds the batches in order (tables first if the caller generated them so) to the engine and to an
Oracle, and after every check_every-th batch (and after the last one) compares every result with
DuckDB running compilation.oracle_sql[i]. A mismatch raises AssertionError naming the query,
backend, mode, batch number and the differing keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import duckdb

from toaster.calculus.results import can_be_null
from toaster.errors import CardinalityError
from toaster.runtime.batch import Batch
from toaster.testing.oracle import Oracle, compare_results, format_differences


@dataclass
class DifferentialReport:
    batches: int          # batches fed
    checks: int           # times all results were compared
    rows_checked: int     # oracle rows compared in total (to see that tests are not vacuous)
    nonempty_checks: int  # checks where some result had a nonzero row


def run_differential(sql_text: str, backend: str, batches: Sequence[Batch] | Callable, *, mode: str = "tuple",
                     check_every: int = 1, compile: Callable | None = None,
                     engine_options: dict | None = None) -> DifferentialReport:
    """Feed `batches` to the engine and compare every result with DuckDB; see the module docstring.

    `batches` is a sequence of Batches or a callable taking the program's RelationDecls and
    returning one (so a test can generate a stream for relations declared in the SQL).
    `compile` replaces toaster.pipeline.compile_sql (for testing the harness itself).
    """
    if compile is None:
        from toaster.pipeline import compile_sql as compile
    comp = compile(sql_text, mode=mode)
    return check_compilation(comp, backend, batches, mode=mode, check_every=check_every,
                             engine_options=engine_options)


def check_compilation(comp, backend: str, batches: Sequence[Batch] | Callable, *, mode: str = "tuple",
                      check_every: int = 1, engine_options: dict | None = None) -> DifferentialReport:
    """run_differential for an existing Compilation (a fresh engine each call): lets property
    tests compile once and check many streams."""
    if check_every < 1:
        raise ValueError("check_every must be >= 1")
    queries = tuple(comp.queries)
    oracle_sql = tuple(comp.oracle_sql)
    if len(queries) != len(oracle_sql):
        raise AssertionError(f"compilation has {len(queries)} queries but {len(oracle_sql)} oracle queries")
    engine = comp.engine(backend, **(engine_options or {}))
    try:
        relations = list(engine.relations.values())
        if callable(batches):
            batches = batches(relations)
        batches = list(batches)
        oracle = Oracle(relations)
        report = DifferentialReport(len(batches), 0, 0, 0)
        try:
            for n, batch in enumerate(batches, start=1):
                engine.apply(batch)
                oracle.apply(batch)
                if n % check_every == 0 or n == len(batches):
                    _check(engine, oracle, queries, oracle_sql, backend, mode, n, batch, report)
            if not batches:
                _check(engine, oracle, queries, oracle_sql, backend, mode, 0, None, report)
        finally:
            oracle.close()
        return report
    finally:
        engine.close()


def _check(engine, oracle, queries, oracle_sql, backend, mode, n, batch, report) -> None:
    names = [r.name for r in engine.queries]
    report.checks += 1
    nonempty = False
    for q, sql in zip(queries, oracle_sql):
        if q.name not in names:
            raise AssertionError(f"{backend}/{mode}: engine reported no result {q.name} "
                                 f"(it reported {sorted(names)})")
        got, got_error = _read(lambda: engine.result(q.name), CardinalityError)
        expected, expected_error = _read(lambda: oracle.query(sql), duckdb.InvalidInputException)
        if expected_error is not None and "more than one row" not in str(expected_error).lower():
            raise expected_error
        if (got_error is None) != (expected_error is None):
            raise AssertionError(f"backend {backend!r}, mode {mode!r}: result {q.name} after batch {n}: "
                                 f"toaster says {got_error or 'no error'}, DuckDB says "
                                 f"{str(expected_error or 'no error').splitlines()[0]}")
        if got_error is not None:
            continue          # both refuse: a scalar subquery returned more than one row
        report.rows_checked += len(expected)
        nonempty = nonempty or bool(got.rows)
        # where toaster reports NULLs, a NULL must equal only a NULL (else None counts as 0)
        strict = any(d.has_nulls for d in engine.relations.values()) or bool(q.null_keys) or \
            any(can_be_null(t) for t in q.value_terms or ())
        diffs = compare_results(got, expected, got.key_columns, strict_nulls=strict)
        if diffs:
            where = "before any batch" if batch is None else \
                f"after batch {n} ({batch.relation}, {len(batch)} rows, {int((batch.signs < 0).sum())} deletes)"
            raise AssertionError(
                f"backend {backend!r}, mode {mode!r}: result {q.name} differs from DuckDB {where}\n"
                f"oracle SQL: {sql}\n"
                + format_differences(q.name, got.columns, got.key_columns, diffs, got.types))
    if nonempty:
        report.nonempty_checks += 1


def _read(read, error_type):
    """(value, None) or (None, the error_type raised)."""
    try:
        return read(), None
    except error_type as e:
        return None, e


def check_maps_hold_definitions(comp, backend: str, batches, names) -> int:
    """Apply `batches` on a fresh engine, then check that each named map equals its calculus
    definition evaluated over the base relations reached (what a pass that adds or fuses maps
    promises). Returns the number of entries compared; raises AssertionError on a difference."""
    import math
    from toaster.calculus.evaluator import Database, evaluate
    engine = comp.engine(backend)
    relations: dict = {}
    for batch in batches:
        engine.apply(batch)
        table = relations.setdefault(batch.relation, {})
        for sign, row in batch.rows():
            table[row] = table.get(row, 0) + sign
            if table[row] == 0:
                del table[row]
    db = Database(relations=relations)
    entries = 0
    for m in comp.m3.maps:
        if m.name not in names:
            continue
        want = {k: v for k, v in evaluate(m.definition, db, out_vars=m.keys).items()
                if not math.isclose(v, 0, abs_tol=1e-9)}
        got = engine.read_map(m.name)
        if set(got) != set(want) or not all(math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-9)
                                            for k in want):
            raise AssertionError(f"map {m.name} differs from its definition: {got} != {want}")
        entries += len(want)
    return entries
