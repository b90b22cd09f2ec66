"""Interleaved (toaster/runtime/interleaved.py): a multi-relation stream as one Batch per relation
and a tag per event. llvm's native feed walks the tags in one call (toaster/backends/llvm/
feed_interleaved.py) and runs it as one batch; other engines and refused inputs apply its runs.
Every expectation comes from DuckDB (toaster.testing.Oracle)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from toaster.errors import InputError, IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.interleaved import Interleaved
from toaster.testing import Oracle, compare_results

SCHEMA = ("CREATE STREAM R(A int, B float, C string, D int) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
          "CREATE STREAM S(A int, P float) FROM FILE 's.csv' LINE DELIMITED CSV;\n")
QUERY = SCHEMA + ("SELECT R.A, COUNT(*) AS n, SUM(R.B * S.P) AS total FROM R, S "
                  "WHERE R.A = S.A AND R.D > 0 GROUP BY R.A;")
STRINGS = SCHEMA + "SELECT R.C, SUM(R.B) AS total FROM R GROUP BY R.C;"


def pieces(n: int, seed: int, size: int = 97) -> list:
    """n events alternating R and S every ~2, in Interleaved pieces; later events delete earlier rows."""
    rng = np.random.default_rng(seed)
    tags = (np.cumsum(rng.random(n) < 0.45) % 2).astype(np.int8)
    out, live = [], {0: [], 1: []}
    for s in range(0, n, size):
        t = tags[s:s + size]
        parts = []
        for rel in (0, 1):
            k = int((t == rel).sum())
            rows, signs = [], []
            for _ in range(k):
                if live[rel] and rng.random() < 0.3:
                    rows.append(live[rel].pop(int(rng.integers(len(live[rel])))))
                    signs.append(-1)
                else:
                    row = (int(rng.integers(0, 8)), float(rng.integers(1, 50)) / 4,
                           f"c{int(rng.integers(0, 5))}", int(rng.random() < 0.7))
                    if rel == 1:
                        row = row[:2]
                    live[rel].append(row)
                    rows.append(row)
                    signs.append(1)
            cols = list(zip(*rows)) if rows else [[]] * (4 - 2 * rel)
            if rel == 0:
                cols = (np.array(cols[0], np.int64), np.array(cols[1]), pa.array(cols[2], pa.string()),
                        np.array(cols[3], np.int64))
            else:
                cols = (np.array(cols[0], np.int64), np.array(cols[1]))
            parts.append(Batch("RS"[rel], np.array(signs, np.int8), cols, checked=True))
        present = [p for p in (0, 1) if len(parts[p])]
        remap = np.zeros(2, np.int8)
        remap[present] = np.arange(len(present))
        out.append(Interleaved(tuple(parts[p] for p in present), remap[t]))
    return out


class Fed:
    def __init__(self, sql: str, mode: str, backend: str = "llvm"):
        self.comp = compile_sql(sql, mode=mode)
        self.engine = self.comp.engine(backend)
        self.oracle = Oracle(list(self.engine.relations.values()))
        self.calls = []
        feed = getattr(self.engine, "_native_feed", None)
        if feed is not None:
            real = feed.call

            def counted(n, address):
                rc = real(n, address)
                self.calls.append(rc)
                return rc
            feed.call = counted

    def apply(self, mixed: Interleaved) -> None:
        self.engine.apply_many([mixed])
        for run in mixed.runs():
            self.oracle.apply(dataclasses.replace(run, checked=False))

    def assert_matches_duckdb(self) -> None:
        for q, sql in zip(self.comp.queries, self.comp.oracle_sql):
            diffs = compare_results(self.engine.result(q.name), self.oracle.query(sql), len(q.key_columns))
            assert not diffs, diffs

    def close(self) -> None:
        self.engine.close()
        self.oracle.close()


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_interleaved_runs_natively_in_one_call_and_matches_duckdb(mode):
    fed = Fed(QUERY, mode)
    try:
        assert fed.engine._native_feed is not None, "this interpreter's object layout was not recognized"
        for k, mixed in enumerate(pieces(600, seed=1)):
            fed.apply(mixed)
            if k % 2:
                fed.assert_matches_duckdb()
        assert fed.calls and all(rc == 0 for rc in fed.calls)
        fed.assert_matches_duckdb()
    finally:
        fed.close()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_interleaved_with_string_columns_or_on_other_engines_applies_its_runs(backend):
    fed = Fed(STRINGS, "tuple", backend)
    try:
        for mixed in pieces(300, seed=2):
            fed.apply(mixed)
        assert all(rc & 3 != 1 for rc in fed.calls)      # never refused after running a part
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_an_overflowing_interleaved_is_rejected_whole():
    sql = ("CREATE STREAM T(A int, B int) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
           "CREATE STREAM U(A int) FROM FILE 'u.csv' LINE DELIMITED CSV;\n"
           "SELECT T.B, SUM(T.A) AS s, COUNT(*) AS n FROM T, U WHERE T.B = U.A GROUP BY T.B;")
    fed = Fed(sql, "tuple")
    big = 1 << 62
    t = Batch("T", np.ones(4, np.int8), (np.array([5, big, big, 7]), np.array([1, 2, 2, 1])), checked=True)
    u = Batch("U", np.ones(3, np.int8), (np.array([1, 2, 1]),), checked=True)
    try:
        fed.apply(Interleaved((u.slice(0, 2), t.slice(0, 2)), np.array([0, 1, 0, 1], np.int8)))
        before = {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries}
        with pytest.raises(IntegerOverflowError):
            fed.engine.apply_many([Interleaved((t.slice(2, 3), u.slice(2, 3)), np.array([1, 0], np.int8))])
        assert fed.calls[-1] & 3 == 2
        assert {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries} == before
        fed.apply(Interleaved((t.slice(3, 4), u.slice(2, 3)), np.array([1, 0], np.int8)))
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_malformed_interleaved_is_refused():
    b = Batch("U", np.ones(2, np.int8), (np.array([1, 2]),), checked=True)
    with pytest.raises(InputError, match="as many rows"):
        Interleaved((b,), np.zeros(3, np.int8))
    with pytest.raises(InputError, match="tags"):
        Interleaved((b,), np.array([0, 1], np.int8))


def test_tags_changed_after_construction_are_refused_natively_and_in_python():
    fed = Fed(QUERY, "tuple")
    try:
        first, second = pieces(200, seed=3, size=100)
        fed.apply(first)
        before = {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries}
        for bad in (len(second.parts), -1):
            tags = second.tags.copy()
            second.tags[np.flatnonzero(second.tags == 0)[0]] = bad
            with pytest.raises(InputError, match="tags"):
                fed.engine.apply_many([second])
            assert fed.calls[-1] & 3 == 1          # the native check refused it, nothing ran
            second.tags[:] = tags
        second.tags[np.flatnonzero(second.tags == 0)[0]] = 1     # miscounted rows
        with pytest.raises(InputError, match="as many rows"):
            fed.engine.apply_many([second])
        assert {q.name: fed.engine.result(q.name).rows for q in fed.comp.queries} == before
        fed.assert_matches_duckdb()
    finally:
        fed.close()


def test_one_relation_interleaved_runs_as_its_part():
    fed = Fed(QUERY, "tuple")
    try:
        for mixed in pieces(300, seed=4, size=60):
            for part in mixed.parts:        # each piece as one relation after the other
                fed.apply(Interleaved((part,), np.zeros(len(part), np.int8)))
        assert fed.calls and all(rc == 0 for rc in fed.calls)
        fed.assert_matches_duckdb()
    finally:
        fed.close()
