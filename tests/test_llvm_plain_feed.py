"""The llvm engine's apply_many for programs that feed no STRING column (engine.py fills the
native records itself) and the cost of the native entry's own clock reads that the bench leaves
out of Python's share (engine.native_clock_seconds). Expectations from DuckDB (toaster.testing.Oracle)."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from toaster.errors import InputError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results

SQL = ("CREATE STREAM R(A int, B float, D date) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
       "CREATE STREAM S(A int, C int) FROM FILE 's.csv' LINE DELIMITED CSV;\n"
       "SELECT R.A, SUM(R.B * S.C) AS total, COUNT(*) AS n FROM R, S WHERE R.A = S.A GROUP BY R.A;")


def streams(n: int, seed: int = 0) -> tuple[Batch, Batch]:
    rng = np.random.default_rng(seed)
    r = Batch("R", np.ones(n, np.int8), (rng.integers(0, 20, n), rng.random(n),
                                         19950101 + rng.integers(0, 28, n)), checked=True)
    deletes = np.arange(n) % 5 == 4            # each deletes the row before it
    a, c = rng.integers(0, 20, n), rng.integers(0, 9, n)
    a[deletes], c[deletes] = a[np.flatnonzero(deletes) - 1], c[np.flatnonzero(deletes) - 1]
    s = Batch("S", np.where(deletes, -1, 1).astype(np.int8), (a, c), checked=True)
    return r, s


class Run:
    def __init__(self):
        self.comp = compile_sql(SQL, mode="batch")
        self.engine = self.comp.engine("llvm")
        assert self.engine._plain_feed, "this interpreter's object layout was not recognized"
        self.oracle = Oracle(list(self.engine.relations.values()))

    def apply_many(self, group) -> None:
        self.engine.apply_many(group)
        for b in group:
            self.oracle.apply(dataclasses.replace(b, checked=False))

    def rows(self) -> dict:
        return {q.name: self.engine.result(q.name).rows for q in self.comp.queries}

    def assert_matches_duckdb(self) -> None:
        for q, sql in zip(self.comp.queries, self.comp.oracle_sql):
            expected = self.oracle.query(sql)
            assert expected, "a vacuous comparison"
            assert not compare_results(self.engine.result(q.name), expected, len(q.key_columns))

    def close(self) -> None:
        self.engine.close()
        self.oracle.close()


def test_groups_run_natively_and_a_malformed_batch_changes_nothing():
    run = Run()
    r, s = streams(600)
    try:
        calls = run.engine._feed_calls
        run.engine.time_native(time.CLOCK_THREAD_CPUTIME_ID)
        for lo in range(0, 400, 100):
            run.apply_many([r.slice(lo, lo + 100), s.slice(lo, lo + 100)])
        assert calls.value == 4            # one native call per group, none from the Python path
        before = run.rows()
        bad = dataclasses.replace(r.slice(500, 600), columns=(np.full(100, "x", dtype=object),
                                  *(c[500:600] for c in r.columns[1:])))
        with pytest.raises(InputError):
            run.engine.apply_many([r.slice(400, 500), s.slice(400, 500), bad])
        assert run.rows() == before
        run.apply_many([r.slice(400, 500), s.slice(400, 600)])
        run.assert_matches_duckdb()
    finally:
        run.close()


def test_the_native_clock_cost_is_counted_per_timed_call():
    run = Run()
    r, s = streams(300, seed=1)
    try:
        assert run.engine.native_clock_seconds() == (0.0, 0.0)
        run.engine.time_native(time.CLOCK_THREAD_CPUTIME_ID)      # calibrates: calls not counted
        inside, total = run.engine._clock_cost
        assert 0 <= inside <= total and run.engine._feed_calls.value == 0
        for lo in range(0, 300, 100):
            run.apply_many([r.slice(lo, lo + 100), s.slice(lo, lo + 100)])
        assert run.engine.native_clock_seconds() == pytest.approx((3 * inside / 1e9, 3 * total / 1e9))
        run.engine.time_native(None)
        run.apply_many([s.slice(0, 50)])
        assert run.engine._feed_calls.value == 3     # untimed calls cost no clock reads
        run.assert_matches_duckdb()
    finally:
        run.close()
