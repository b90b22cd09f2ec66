"""llvm: full scans that only sum a pure float term into a local are emitted branch-free with
`reassoc` adds (toaster/backends/llvm/scan_sum.py, trigger_gen.scan_sum). Which loops qualify is
checked on hand-built loops and on PSP-shaped programs; the answers against DuckDB after every
batch, with entries deleted to zero (dead entries the scan reads and must skip), zero and
negative keys and values, and a rejected (rolled back) batch."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from toaster.backends.llvm.scan_sum import branch_free_sum
from toaster.errors import IntegerOverflowError
from toaster.imperative.ir import Assign, BinOp, Declare, ForEach, If, Lit, LocalRef, MapGet
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results
from toaster.types import BOOL, FLOAT, INT

K, V, ACC, T = (LocalRef("k", FLOAT), LocalRef("v", FLOAT), LocalRef("acc", FLOAT), LocalRef("t", FLOAT))
THRESHOLD = LocalRef("total", FLOAT)


def _loop(cond, then):
    return ForEach("M", (None,), (K,), V, (If(cond, then),))


def _sum(term):
    return Assign(ACC, BinOp("+", ACC, term, FLOAT))


def test_which_loops_are_branch_free_sums():
    above = BinOp(">", K, BinOp("*", Lit(0.5, FLOAT), THRESHOLD, FLOAT), BOOL)
    assert branch_free_sum(_loop(above, (_sum(V),))) is not None
    assert branch_free_sum(_loop(above, (Declare(T, BinOp("/", V, K, FLOAT)), _sum(T)))) is not None
    # a map read, checked integer arithmetic, the sum read by the test, an INT sum: not pure / not a float sum
    assert branch_free_sum(_loop(above, (_sum(MapGet("N", (K,), FLOAT)),))) is None
    n = LocalRef("n", INT)
    assert branch_free_sum(_loop(above, (Declare(n, BinOp("*", Lit(-1, INT), n, INT)), _sum(V)))) is None
    assert branch_free_sum(_loop(BinOp(">", K, ACC, BOOL), (_sum(V),))) is None
    assert branch_free_sum(_loop(above, (Assign(n, BinOp("+", n, n, INT)),))) is None
    assert branch_free_sum(_loop(above, (_sum(V), _sum(V)))) is None
    # an INT sum: checked arithmetic that is 0 where the entry is skipped (its value read as 0)
    c, total = LocalRef("c", INT), LocalRef("count", INT)
    count = ForEach("N", (None,), (K,), c, (If(above, (Declare(n, BinOp("*", Lit(-1, INT), c, INT)),
                                                        Assign(total, BinOp("+", total, n, INT)))),))
    assert branch_free_sum(count) is not None
    squared = ForEach("N", (None,), (K,), c, (If(above, (Assign(total, BinOp("+", total, BinOp("*", c, c, INT), INT)),)),))
    assert branch_free_sum(squared) is None


STREAMS = ("CREATE STREAM T(K int, V int, P float) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
           "CREATE STREAM U(K int, V int, P float) FROM FILE 'u.csv' LINE DELIMITED CSV;\n")
QUERIES = {   # PSP's shape, and sums over keys below a threshold that can be negative
    "psp": STREAMS + ("SELECT SUM(u.P - t.P) AS s FROM T t, U u WHERE t.V > 0.2 * (SELECT SUM(t1.V) FROM T t1) "
                      "AND u.V > 0.2 * (SELECT SUM(u1.V) FROM U u1);"),
    "below": STREAMS + "SELECT SUM(t.P * t.V) AS s FROM T t WHERE t.V < 0.1 * (SELECT SUM(t1.P) FROM T t1);",
}
TOTAL = "\nSELECT SUM(V) AS total FROM T;"


def _batch(rel, rng, live, n, big=False) -> Batch:
    rows, signs = [], []
    for j in range(n):
        if live and rng.random() < 0.45 and not big:
            rows.append(live.pop(int(rng.integers(len(live)))))
            signs.append(-1)
        else:
            v = (1 << 62) if big and j >= n - 2 else int(rng.integers(-2, 8))
            row = (int(rng.integers(0, 4)), v, float(rng.integers(-20, 40)) / 4)
            rows.append(row)
            signs.append(1)
            if not big:
                live.append(row)
    cols = list(zip(*rows))
    return Batch(rel, np.array(signs, np.int8), (np.array(cols[0], np.int64), np.array(cols[1], np.int64),
                                                np.array(cols[2], float)), checked=True)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_branch_free_sums_equal_duckdb_after_every_batch(name):
    comp = compile_sql(QUERIES[name] + TOTAL, mode="tuple")
    prog = comp.stage("imp")
    assert any(branch_free_sum(s) for t in prog.triggers for s in t.body if isinstance(s, ForEach))
    engine = comp.engine("llvm")
    oracle = Oracle(list(engine.relations.values()))
    rng = np.random.default_rng(7)
    live = {"T": [], "U": []}
    try:
        for step in range(10):
            for rel in ("T", "U"):
                b = _batch(rel, rng, live[rel], 15)
                engine.apply(b)
                oracle.apply(dataclasses.replace(b, checked=False))
            if step == 4:     # rejected mid-way: rolled back
                with pytest.raises(IntegerOverflowError):
                    engine.apply(_batch("T", rng, [], 6, big=True))
            for q, qsql in zip(comp.queries, comp.oracle_sql):
                diffs = compare_results(engine.result(q.name), oracle.query(qsql), len(q.key_columns))
                assert not diffs, (step, diffs)
    finally:
        engine.close()
        oracle.close()
