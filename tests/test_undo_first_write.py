"""The undo log records a map entry's value once per batch, at its first write (undo.py's
stamps): a batch that writes the same entries many times and then fails must still leave every
map exactly as it was, and batches after it (new epochs) must record again. Expectations: the
maps read back before the failing batch, and DuckDB for the results."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from toaster.errors import IntegerOverflowError
from toaster.m3.batch_delta import is_delta_map_name
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.interleaved import Interleaved
from toaster.testing import Oracle, compare_results

SQL = ("CREATE STREAM T(A int, B int) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
       "CREATE STREAM U(A int, P float) FROM FILE 'u.csv' LINE DELIMITED CSV;\n"
       "SELECT T.B, SUM(T.A) AS s, COUNT(*) AS n, SUM(T.A * U.P) AS w FROM T, U WHERE T.B = U.A GROUP BY T.B;\n"
       "SELECT SUM(T.A) AS total, COUNT(*) AS c FROM T;")
BIG = 1 << 62


def _state(engine, comp):
    """Every map of the program, read back (the scalar maps too), but a batch's DELTA_<R>_<k>:
    scratch that every batch refills before reading, so a rejected batch need not restore it."""
    return {m.name: engine.read_map(m.name) for m in comp.m3.maps
            if not is_delta_map_name(m.name, engine.relations)}


def _t(a, b, signs=None):
    n = len(a)
    return Batch("T", np.ones(n, np.int8) if signs is None else np.array(signs, np.int8),
                 (np.array(a, np.int64), np.array(b, np.int64)), checked=True)


def _u(a, p):
    return Batch("U", np.ones(len(a), np.int8), (np.array(a, np.int64), np.array(p, float)), checked=True)


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_a_failing_batch_that_rewrote_its_entries_restores_them_exactly(mode):
    comp = compile_sql(SQL, mode=mode)
    engine = comp.engine("llvm")
    oracle = Oracle(list(engine.relations.values()))
    rng = np.random.default_rng(5)
    try:
        applied = []
        for step in range(6):
            # the same few keys written many times, inserts and deletes of the same rows
            a = rng.integers(1, 9, 40).tolist()
            b = rng.integers(0, 3, 40).tolist()
            good_t = _t(a + a[:10], b + b[:10], [1] * 40 + [-1] * 10)
            good_u = _u(rng.integers(0, 3, 6).tolist(), (rng.integers(1, 20, 6) / 4).tolist())
            tags = np.array([1] * 3 + [0] * 25 + [1] * 3 + [0] * 25, np.int8)
            engine.apply_many([Interleaved((good_t, good_u), tags)] if mode == "tuple" else [good_t, good_u])
            applied += [good_t, good_u]
            before = _state(engine, comp)
            # writes the same entries again, then overflows SUM(T.A) on its last event
            bad = _t(a[:20] + [BIG, BIG], b[:20] + [b[0], b[0]])
            with pytest.raises(IntegerOverflowError):
                engine.apply_many([bad])
            assert _state(engine, comp) == before, f"step {step}"
        for batch in applied:
            oracle.apply(dataclasses.replace(batch, checked=False))
        for q, sql in zip(comp.queries, comp.oracle_sql):
            diffs = compare_results(engine.result(q.name), oracle.query(sql), len(q.key_columns))
            assert not diffs, diffs
    finally:
        engine.close()
        oracle.close()
