"""STRING columns encoded inside toaster.feed through the native string hash table
(toaster/backends/llvm/string_hash.py): Arrow chunks as segments, batches across chunk borders,
strings that arrive late, empty / multi-byte / long strings, the table growing, collections
rebuilding it, dictionary columns taking the ids path. Expectations from DuckDB only."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from toaster.runtime.batch import Batch

from test_llvm_feed import Fed

SQL = ("CREATE STREAM T(A int, C string, E string) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
       "SELECT C, COUNT(*) AS n, SUM(A) AS s FROM T WHERE E LIKE '%z%' GROUP BY C;")


def words(rng, n: int, distinct: int) -> list:
    pool = ["", "z", "é", "zz日本", "ab" * 9, "ab" * 9 + "c", "ab" * 9 + "d", "prefix-z-" + "x" * 40]
    pool += [f"w{k}z" if k % 2 else f"w{k}" for k in range(distinct)]
    return [pool[k] for k in rng.integers(0, len(pool), n).tolist()]


def root(n: int, chunks: int, distinct: int, seed: int, late: bool = True) -> Batch:
    """A checked T root whose string columns are `chunks` Arrow chunks; with `late`, strings
    never seen before appear in its second half."""
    rng = np.random.default_rng(seed)
    ins = n - n // 5                  # the last fifth deletes rows of the first half
    rows = np.concatenate([np.arange(ins), rng.choice(ins // 2, n - ins, replace=False)]).tolist()
    c = words(rng, ins, distinct)
    if late:
        c[ins // 2:] = [s + "-late" if k % 3 == 0 else s for k, s in enumerate(c[ins // 2:])]
    e = words(rng, ins, 5)
    a = rng.integers(-50, 50, ins)
    c, e, a = [c[i] for i in rows], [e[i] for i in rows], a[rows]
    cut = sorted(set(rng.integers(1, n, chunks - 1).tolist()))
    bounds = [0] + cut + [n]

    def chunked(vals):
        return pa.chunked_array([pa.array(vals[a:b], pa.string()) for a, b in zip(bounds, bounds[1:])])
    signs = np.where(np.arange(n) < ins, 1, -1).astype(np.int8)
    return Batch("T", signs, (a, chunked(c), chunked(e)), checked=True)


@pytest.mark.parametrize("mode", ["batch", "tuple"])
def test_strings_across_chunks_and_late_arrivals_match_duckdb(mode):
    fed = Fed(mode, SQL)
    r = root(3000, 7, 40, seed=1)
    try:
        for start in range(0, 3000, 350):        # batches cross the chunks' borders
            fed.apply_many([r.slice(start, min(start + 350, 3000))])
            fed.assert_matches_duckdb()
        assert all(c == 0 or c & 3 == 3 for c in fed.codes)
        assert sum(1 for c in fed.codes if c & 3 == 3) <= 2 * len(range(0, 3000, 350))
    finally:
        fed.close()


def test_the_table_grows_and_collections_rebuild_it():
    fed = Fed("batch", SQL)
    fed.engine._pool.collect_min = 16         # collections between batches
    r = root(6000, 3, 3000, seed=2)
    try:
        for start in range(0, 6000, 1000):
            fed.apply_many([r.slice(start, start + 1000)])
        assert fed.engine._pool.collections > 0
        fed.assert_matches_duckdb()
        again = root(2000, 2, 3000, seed=3, late=False)   # strings freed and met again
        fed.apply_many([again])
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_a_whole_column_batch_and_a_dictionary_column():
    fed = Fed("tuple", SQL)
    r = root(1500, 4, 30, seed=4)
    try:
        fed.apply_many([r])                      # no origin: the batch's own chunks
        cols = r.slice(0, 500).columns
        dict_batch = Batch("T", np.ones(500, np.int8),
                           (cols[0], cols[1].combine_chunks().dictionary_encode(), cols[2]), checked=True)
        fed.apply_many([dict_batch])
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_a_large_batch_of_distinct_strings_interns_in_few_rounds():
    fed = Fed("batch", SQL)
    n = 20000
    c = pa.chunked_array([pa.array([f"name{k}z" for k in range(a, a + 5000)]) for a in range(0, n, 5000)])
    e = pa.chunked_array([pa.array(["z"] * 5000)] * 4)
    big = Batch("T", np.ones(n, np.int8), (np.arange(n), c, e), checked=True)
    try:
        fed.apply_many([big])
        assert sum(1 for x in fed.codes if x & 3 == 3) <= 4        # windows of 4,096 rows, doubling
        fed.assert_matches_duckdb()
    finally:
        fed.close()


# ---- new strings given ids natively (no string functions: the dictionary derives no tables)
KEYS_SQL = ("CREATE STREAM T(A int, C string, E string) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
            "SELECT C, E, COUNT(*) AS n, SUM(A) AS s FROM T GROUP BY C, E;")


@pytest.mark.parametrize("mode", ["batch", "tuple"])
def test_new_strings_get_ids_natively_and_the_dictionary_learns_them_lazily(mode):
    fed = Fed(mode, KEYS_SQL)
    pool = fed.engine._pool
    r = root(3000, 7, 400, seed=5)
    try:
        known = len(pool._ids)
        for start in range(0, 3000, 350):
            fed.apply_many([r.slice(start, min(start + 350, 3000))])
        assert not any(c & 3 == 3 for c in fed.codes)      # no MISSING return to Python
        assert len(pool._ids) == known < len(pool)          # not learned yet
        fed.assert_matches_duckdb()                          # reading results decodes them
        assert len(pool._ids) == len(pool)
    finally:
        fed.close()


def test_native_ids_survive_collections_and_python_interning_beside_them():
    fed = Fed("batch", KEYS_SQL)
    pool = fed.engine._pool
    pool.collect_min = 16
    r = root(6000, 3, 3000, seed=6)
    try:
        for k, start in enumerate(range(0, 6000, 1000)):
            part = r.slice(start, start + 1000)
            if k % 2:       # a dictionary column: ids from the Python dictionary, interned there
                cols = part.columns
                part = Batch("T", part.signs.copy(), (cols[0], cols[1].combine_chunks().dictionary_encode(),
                                                      cols[2]), checked=True)
            fed.apply_many([part])
        assert pool.collections > 0
        fed.assert_matches_duckdb()
        fed.apply_many([root(2000, 2, 3000, seed=7, late=False)])     # freed strings met again
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_a_rejected_batch_of_new_strings_leaves_the_views_as_they_were():
    from toaster.errors import ToasterError
    fed = Fed("batch", KEYS_SQL)
    try:
        fed.apply_many([root(500, 2, 100, seed=8)])
        name = fed.comp.queries[0].name
        before = fed.engine.result(name)
        n = 40
        c = pa.chunked_array([pa.array([f"brand-new-{k // 2}" for k in range(n)])])
        e = pa.chunked_array([pa.array(["x"] * n)])
        a = np.full(n, 2**62, np.int64)          # pairs' sums overflow: the batch is rejected
        bad = Batch("T", np.ones(n, np.int8), (a, c, e), checked=True)
        with pytest.raises(ToasterError):
            fed.engine.apply_many([bad])
        fed.assert_matches_duckdb()              # the oracle never saw the rejected batch
        assert fed.engine.result(name) == before
        fed.apply_many([root(500, 2, 100, seed=9)])
        fed.assert_matches_duckdb()
    finally:
        fed.close()
