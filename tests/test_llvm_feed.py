"""The llvm engine's native batch entry (toaster/backends/llvm/feed.py): reader-checked batches
go to native code in one call per group, which checks their numpy columns itself; anything it
does not take falls back to the Python path; groups stay all-or-nothing on malformed input and
failing batches are rolled back. Every expectation comes from DuckDB (toaster.testing.Oracle)."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pyarrow as pa
import pytest

from toaster.errors import InputError, IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results

SCHEMA = ("CREATE STREAM R(A int, B float, C string, D date, E string) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
          "CREATE STREAM S(A int, C string) FROM FILE 's.csv' LINE DELIMITED CSV;\n")
QUERY = SCHEMA + ("SELECT R.C, COUNT(*) AS n, SUM(R.B * S.A) AS total FROM R, S "
                  "WHERE R.A = S.A AND R.D < DATE('1995-06-01') AND R.C LIKE 'k%' GROUP BY R.C;")


def roots(n: int, seed: int = 0) -> dict:
    """Whole-stream checked batches of R and S (canonical columns, as toaster's readers give);
    R's last quarter deletes rows of its first half."""
    rng = np.random.default_rng(seed)
    ins = n - n // 4
    rows = np.concatenate([np.arange(ins), rng.choice(ins // 2, n - ins, replace=False)])
    keys = rng.integers(0, 30, ins).tolist()
    names = [f"k{v}" if v % 3 else f"x{v}" for v in keys]
    r = Batch("R", np.where(np.arange(n) < ins, 1, -1).astype(np.int8),
              (rng.integers(0, 40, ins)[rows], rng.random(ins)[rows], pa.array([names[i] for i in rows.tolist()]),
               (19950000 + rng.integers(1, 13, ins) * 100 + rng.integers(1, 29, ins))[rows],
               pa.array([f"unread{v}" for v in rows.tolist()])), checked=True)
    s = Batch("S", np.ones(n, np.int8), (rng.integers(0, 40, n), pa.array(["s"] * n)), checked=True)
    return {"R": r, "S": s}


class Fed:
    def __init__(self, mode: str, sql: str = QUERY):
        self.comp = compile_sql(sql, mode=mode)
        self.engine = self.comp.engine("llvm")
        self.oracle = Oracle(list(self.engine.relations.values()))
        feed = self.engine._native_feed
        assert feed is not None, "this interpreter's object layout was not recognized"
        self.calls, self.codes = 0, []
        real = feed.call

        def counted(n, address):
            self.calls += 1
            rc = real(n, address)
            self.codes.append(rc)
            return rc
        feed.call = counted

    def apply_many(self, group) -> None:
        self.engine.apply_many(group)
        for b in group:
            self.oracle.apply(dataclasses.replace(b, checked=False))

    def assert_matches_duckdb(self) -> None:
        for q, sql in zip(self.comp.queries, self.comp.oracle_sql):
            expected = self.oracle.query(sql)
            assert expected, "a vacuous comparison"
            diffs = compare_results(self.engine.result(q.name), expected, len(q.key_columns))
            assert not diffs, diffs

    def close(self) -> None:
        self.engine.close()
        self.oracle.close()


@pytest.mark.parametrize("mode", ["batch", "tuple"])
def test_sliced_reader_batches_run_natively_one_call_per_group(mode, monkeypatch):
    from toaster.backends.llvm import strings
    monkeypatch.setattr(strings, "ROOT_SHIFT", 6)      # batches span several blocks of ids
    fed = Fed(mode)
    rs = roots(2000)
    fed.engine._pool.collect_min = 8      # string collections between batches
    try:
        for start in range(0, 2000, 300):
            fed.apply_many([rs["S"].slice(start, start + 300), rs["R"].slice(start, start + 300)])
        # one call per group, and one more per batch holding strings new to the native table
        missing = sum(1 for c in fed.codes if c & 3 == 3)
        assert fed.calls - missing == len(range(0, 2000, 300)) and all(c in (0,) or c & 3 == 3 for c in fed.codes)
        assert fed.engine._pool.collections > 0
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def odd_columns(b: Batch) -> list:
    """Variants of a checked R batch that the native check refuses but Python accepts."""
    cols = list(b.columns)
    strided = np.repeat(cols[0], 2)[::2]
    sub = cols[1].view(type("FloatSub", (np.ndarray,), {}))
    return [dataclasses.replace(b, columns=(strided, *cols[1:])),
            dataclasses.replace(b, columns=(cols[0].astype(np.int32), *cols[1:])),
            dataclasses.replace(b, columns=(cols[0], sub, *cols[2:])),
            dataclasses.replace(b, signs=b.signs.astype(np.int64)),
            dataclasses.replace(b, columns=(cols[0], cols[1], pa.chunked_array([cols[2]]), *cols[3:]))]


def test_columns_native_code_does_not_take_fall_back_to_python():
    fed = Fed("batch")
    rs = roots(400, seed=1)
    try:
        fed.apply_many([rs["S"]])
        for k, b in enumerate(odd_columns(rs["R"].slice(0, 400))):
            before = fed.calls
            fed.apply_many([b.slice(0, 200 + k)] if k == 4 else [b])
            assert fed.calls == before + 1
        assert [c & 3 for c in fed.codes[1:5]] == [1, 1, 1, 1]       # refused, then run by Python
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_a_group_with_a_malformed_batch_changes_nothing():
    fed = Fed("batch")
    rs = roots(300, seed=2)
    try:
        fed.apply_many([rs["S"], rs["R"].slice(0, 100)])
        before = {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries}
        bad = dataclasses.replace(rs["R"].slice(100, 200), columns=(rs["R"].columns[0][100:200],
                                  np.full(100, np.nan).astype(object), *rs["R"].columns[2:]))
        with pytest.raises(InputError):
            fed.engine.apply_many([rs["R"].slice(200, 300), bad])
        assert {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries} == before
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_an_overflowing_batch_is_rolled_back_and_later_ones_apply():
    sql = "CREATE STREAM T(A int, B int) FROM FILE 't.csv' LINE DELIMITED CSV;\nSELECT B, SUM(A) AS s FROM T GROUP BY B;"
    fed = Fed("batch", sql)
    big = 1 << 62
    root = Batch("T", np.ones(6, np.int8), (np.array([5, big, big, big, 7, 1]), np.array([1, 2, 2, 2, 1, 3])),
                 checked=True)
    try:
        fed.apply_many([root.slice(0, 2)])
        with pytest.raises(IntegerOverflowError):
            fed.engine.apply_many([root.slice(2, 4)])
        assert fed.codes[-1] & 3 == 2
        fed.apply_many([root.slice(4, 6)])
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_a_failing_string_function_rejects_the_batch_natively():
    sql = ("CREATE STREAM T(A int, C string) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
           "SELECT SUM(A) AS s FROM T WHERE CAST_DATE(C) < DATE('2000-01-01');")
    fed = Fed("batch", sql)
    root = Batch("T", np.ones(4, np.int8), (np.array([1, 2, 3, 4]),
                                            pa.array(["1990-01-01", "1999-02-03", "nope", "1980-05-05"])),
                 checked=True)
    try:
        fed.apply_many([root.slice(0, 2)])
        with pytest.raises(InputError, match="rejected"):
            fed.engine.apply_many([root.slice(2, 4)])
        fed.apply_many([root.slice(3, 4)])
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_native_time_is_counted_and_slices_pickle_without_their_root():
    fed = Fed("batch")
    rs = roots(200, seed=3)
    try:
        fed.engine.time_native(0)          # CLOCK_REALTIME: any clock id works
        fed.apply_many([rs["S"], rs["R"]])
        assert fed.engine.native_seconds() > 0
    finally:
        fed.close()
    part = rs["R"].slice(10, 20)
    assert part.origin == (rs["R"], 10) and part.slice(2, 5).origin == (rs["R"], 12)
    copy = pickle.loads(pickle.dumps(part))
    assert copy.origin is None and copy.columns[0].tolist() == part.columns[0].tolist()
