"""llvm tuple mode: signed triggers (toaster/imperative/signed.py: one function for a relation's
insert and delete triggers when the delete trigger is the insert negated) and the hash maps'
direct table for small one-component keys (hashmap.py). Which triggers are signed is checked on
the program; the answers against DuckDB after every batch, across keys below, at and above the
direct table's range, negative keys, entries deleted to zero and compacted, and batches rejected
by an integer overflow (rolled back)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from toaster.backends.llvm.codegen import _ModuleGen
from toaster.backends.llvm.hashmap import DIRECT_KEYS
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.interleaved import Interleaved
from toaster.testing import Oracle, compare_results

STREAMS = ("CREATE STREAM T(K int, V int, P float) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
           "CREATE STREAM U(K int, V int, P float) FROM FILE 'u.csv' LINE DELIMITED CSV;\n")
# SPREAD's shape (per-key sums of both sides, their products), and PSP's (a condition on the
# key against a global sum: loops over the volumes, re-evaluated per event)
JOIN = STREAMS + ("SELECT t.K, SUM((u.P - t.P) * t.P * u.P) AS e, COUNT(*) AS n FROM T t, U u "
                  "WHERE t.K = u.K GROUP BY t.K;")
THRESH = STREAMS + ("SELECT SUM(u.P - t.P) AS s FROM T t, U u "
                    "WHERE t.V > 0.25 * (SELECT SUM(t1.V) FROM T t1) AND u.V > 0.25 * (SELECT SUM(u1.V) FROM U u1);")
SELF = STREAMS + "SELECT t1.K, COUNT(*) AS n FROM T t1, T t2 WHERE t1.K = t2.K GROUP BY t1.K;"
# with every program: an integer sum that two BIG inserts overflow (the rejected batches)
TOTAL = "\nSELECT SUM(V) AS total FROM T;"
BIG = 1 << 62


def _signed(sql):
    return set(_ModuleGen(compile_sql(sql, mode="tuple").stage("imp")).signed_fns)


def test_signed_where_the_delete_trigger_is_the_insert_negated():
    assert _signed(JOIN) == {"T", "U"}
    assert _signed(THRESH) == {"T", "U"}
    # a self-join's delta has a term quadratic in the event (+1 for an insert and for a delete)
    assert "T" not in _signed(SELF)


class _Book:
    """A relation's live rows: inserts of new rows, deletes of live ones (~40 %)."""

    def __init__(self, rel, rng, keys):
        self.rel, self.rng, self.keys, self.live = rel, rng, keys, []

    def batch(self, n, delete_all=False, big=False) -> Batch:
        rows, signs = [], []
        for j in range(n if not delete_all else len(self.live)):
            if delete_all or (self.live and self.rng.random() < 0.4 and not (big and j >= n - 2)):
                rows.append(self.live.pop(int(self.rng.integers(len(self.live)))))
                signs.append(-1)
            else:        # big: its last two inserts overflow SUM(V), the batch fails there
                row = (int(self.rng.choice(self.keys)), BIG if big and j >= n - 2 else int(self.rng.integers(1, 6)),
                       float(self.rng.integers(1, 40)) / 4)
                rows.append(row)
                signs.append(1)
                if not big:
                    self.live.append(row)
        if big:          # rejected: none of its rows stays
            self.live += [r for r, sg in zip(rows, signs) if sg < 0]
        cols = list(zip(*rows))
        return Batch(self.rel, np.array(signs, np.int8), (np.array(cols[0], np.int64), np.array(cols[1], np.int64),
                                                          np.array(cols[2], float)), checked=True)


@pytest.mark.parametrize("sql", [JOIN, THRESH, SELF], ids=["join", "threshold", "self-join"])
def test_tuple_mode_equals_duckdb_after_every_batch(sql):
    comp = compile_sql(sql + TOTAL, mode="tuple")
    engine = comp.engine("llvm")
    oracle = Oracle(list(engine.relations.values()))
    rng = np.random.default_rng(12)
    keys = np.array([-3, 0, 1, 2, 7, DIRECT_KEYS - 1, DIRECT_KEYS, DIRECT_KEYS + 1, 10 ** 9])
    books = _Book("T", rng, keys), _Book("U", rng, keys)
    try:
        for step in range(8):
            t, u = books[0].batch(30, delete_all=step == 5), books[1].batch(20)
            tags = rng.permutation(np.array([0] * len(t.signs) + [1] * len(u.signs), np.int8))
            engine.apply_many([Interleaved((t, u), tags)])
            for b in (t, u):
                oracle.apply(dataclasses.replace(b, checked=False))
            if step in (2, 6):   # rejected mid-way: rolled back
                with pytest.raises(IntegerOverflowError):
                    engine.apply_many([books[0].batch(12, big=True)])
            for q, qsql in zip(comp.queries, comp.oracle_sql):
                diffs = compare_results(engine.result(q.name), oracle.query(qsql), len(q.key_columns))
                assert not diffs, (step, diffs)
    finally:
        engine.close()
        oracle.close()
