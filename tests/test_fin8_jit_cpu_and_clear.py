"""fin8: the JIT's target CPU (jit.py: host by default, TOASTER_JIT_CPU=generic for baseline x86-64,
both in the machine-code cache key) and the clearing of a one-key map's direct table
(hashmap.py: the entries' slots when it has fewer than DIRECT_KEYS entries, else all of it).

The clear is checked on a grouped range-correlated nested aggregate whose tuple trigger clears
temp maps keyed by the group every event: the answers against DuckDB after every batch while the
groups grow from a few (the walk) past DIRECT_KEYS (the memset), keys below and above the direct
range, groups deleted to zero, and batches rejected by an integer overflow (rolled back)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from toaster.backends.llvm import jit
from toaster.backends.llvm.hashmap import DIRECT_KEYS
from toaster.errors import IntegerOverflowError, UsageError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results

SQL = ("CREATE STREAM T(K int, V int, P float) FROM FILE 't.csv' LINE DELIMITED CSV;\n"
       "SELECT b.K, SUM(b.P * b.V) AS s FROM T b WHERE 0.9 * (SELECT SUM(t1.V) FROM T t1) > "
       "(SELECT SUM(t2.V) FROM T t2 WHERE t2.P > b.P) GROUP BY b.K;\n"
       "SELECT SUM(V) AS total FROM T;")
BIG = 1 << 62


def test_the_grouped_trigger_clears_one_key_temp_maps():
    imp = compile_sql(SQL, mode="tuple").stage("imp")
    temp = {m.name for m in imp.maps if m.kind == "temp" and len(m.key_types) == 1}
    text = str(imp)
    assert any(f"clear({name})" in text for name in temp)


def _batch(rng, live, keys, n, big=False):
    rows, signs = [], []
    for j in range(n):
        if live and rng.random() < 0.4 and not (big and j >= n - 2):
            rows.append(live.pop(int(rng.integers(len(live)))))
            signs.append(-1)
        else:
            row = (int(rng.choice(keys)), BIG if big and j >= n - 2 else int(rng.integers(1, 6)),
                   float(rng.integers(1, 400)) / 4)
            rows.append(row)
            signs.append(1)
            if not big:
                live.append(row)
    if big:                          # rejected: its deletes come back
        live += [r for r, s in zip(rows, signs) if s < 0]
    cols = list(zip(*rows))
    return Batch("T", np.array(signs, np.int8), (np.array(cols[0], np.int64), np.array(cols[1], np.int64),
                                                 np.array(cols[2], float)), checked=True)


def test_tuple_mode_equals_duckdb_while_the_groups_pass_the_direct_range():
    comp = compile_sql(SQL, mode="tuple")
    engine = comp.engine("llvm")
    oracle = Oracle(list(engine.relations.values()))
    rng = np.random.default_rng(8)
    few = np.array([0, 1, 2, 7, DIRECT_KEYS - 1, DIRECT_KEYS, 10 ** 9])
    many = np.concatenate([np.arange(DIRECT_KEYS + 60), [-5, 10 ** 9]])
    live: list = []
    try:
        for step in range(10):
            keys = few if step < 4 else many
            b = _batch(rng, live, keys, 40 if step < 4 else 500)
            engine.apply_many([b])
            oracle.apply(dataclasses.replace(b, checked=False))
            if step in (2, 7):       # rejected mid-way: rolled back
                with pytest.raises(IntegerOverflowError):
                    engine.apply_many([_batch(rng, live, keys, 12, big=True)])
            for q, qsql in zip(comp.queries, comp.oracle_sql):
                diffs = compare_results(engine.result(q.name), oracle.query(qsql), len(q.key_columns))
                assert not diffs, (step, diffs)
        # the groups' temp map held more than DIRECT_KEYS entries: the memset branch ran
        assert len(engine.result(comp.queries[0].name).rows) > DIRECT_KEYS
    finally:
        engine.close()
        oracle.close()


def test_jit_cpu_is_the_hosts_unless_generic(monkeypatch):
    import llvmlite.binding as llvm
    monkeypatch.delenv(jit.JIT_CPU_ENV, raising=False)
    cpu, features = jit.jit_cpu()
    assert cpu == llvm.get_host_cpu_name() and features == llvm.get_host_cpu_features().flatten()
    monkeypatch.setenv(jit.JIT_CPU_ENV, "generic")
    assert jit.jit_cpu() == ("", "")
    monkeypatch.setenv(jit.JIT_CPU_ENV, "skylake")
    with pytest.raises(UsageError, match="host' or 'generic"):
        jit.jit_cpu()


def test_the_cache_keeps_one_object_per_cpu_and_both_give_the_same_views(tmp_path, monkeypatch):
    comp = compile_sql(SQL, mode="tuple")
    rng = np.random.default_rng(3)
    live: list = []
    batches = [_batch(rng, live, np.arange(20), 60) for _ in range(3)]
    answers = []
    for cpu in ("host", "generic", "host"):
        monkeypatch.setenv(jit.JIT_CPU_ENV, cpu)
        engine = comp.engine("llvm", object_cache=str(tmp_path))
        try:
            engine.apply_many(batches)
            answers.append([engine.result(q.name).rows for q in comp.queries])
        finally:
            engine.close()
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".o")]) == 2
    assert answers[0] == answers[1] == answers[2]
