"""Dense node arrays of the ungrouped range indexes in llvm (toaster/backends/llvm/range_dense.py,
helper fin10).

While an ungrouped masked index's kept levels span few bits its nodes live in flat arrays, not in
its hash map; structural steps (the region growing, the leaf level moving down, the rollback's
rebuild, rix.unmask) go through the hash map and refill the arrays, or leave them off when the
span no longer fits. Checked: the plan builds the arrays (and TOASTER_RIX_DENSE=off does not),
results equal DuckDB and the hash-only engine after every event of a stream with deletions whose
keys leave the dense span (far prices, negative prices, zeros, infinities), the index maps equal
the hash-only engine's at the end, and a batch rejected for an overflow is forgotten.
"""
from __future__ import annotations

import random

import pytest

from toaster.pipeline import compile_sql

FINANCE = "tests/queries/finance"
# P is only compared: its index takes +-inf; V is summed
SQL = ("CREATE STREAM B(P float, V float) FROM FILE 'b.csv' LINE DELIMITED CSV;\n"
       "SELECT SUM(b.V) AS s FROM B b WHERE 0.25 * (SELECT SUM(b3.V) FROM B b3) > "
       "(SELECT SUM(b2.V) FROM B b2 WHERE b2.P > b.P);")
INDEXES = 2


def _engine(text, dense: str, monkeypatch):
    monkeypatch.setenv("TOASTER_RIX_DENSE", dense)
    comp = compile_sql(text, mode="tuple")
    return comp, comp.engine("llvm")


def test_vwap_indexes_live_in_arrays_and_the_switch_turns_them_off(monkeypatch):
    from toaster.errors import UsageError
    with open(f"{FINANCE}/vwap.sql") as f:
        vwap = f.read()
    with open(f"{FINANCE}/mst.sql") as f:
        mst = f.read()

    def llvm_ir(text, dense):
        monkeypatch.setenv("TOASTER_RIX_DENSE", dense)
        return str(compile_sql(text, mode="tuple").stage("llvm"))
    on, off, grouped = llvm_ir(vwap, "on"), llvm_ir(vwap, "off"), llvm_ir(mst, "on")
    for idx in ("VWAP_mBIDS1_rix", "VWAP_mBIDS3_rix", "VWAP_mBIDS4_rix"):
        for fn in ("get", "add", "kget", "kset", "flush", "reload"):
            assert f'@"rix.dense.{fn}.{idx}"' in on
    assert "rix.dense.get." not in off
    # MST's per-broker indexes stay in their hash maps (one array per group: not done)
    assert '@"rix.dense.get.MST_mBIDS8_rix"' not in grouped and '@"rix.dense.get.MST_mASKS4_rix"' in grouped
    with pytest.raises(UsageError):
        llvm_ir(vwap, "wide")


def _stream(seed: int):
    """(price, volume, sign) events: prices 1/64 apart around 100 (the arrays, the leaf level
    moving down), then far ones (1e300, 1e-300, 0.0, -0.0: past a 16-bit span), then negative
    prices and infinities (full width); a live row is deleted now and then."""
    rng = random.Random(seed)
    near = [100.0 + k / 64 for k in range(0, 40)] + [104.0, 100.5, 101.0]
    far = [1e300, 1e-300, 0.0, -0.0, 7.5e9]
    wide = [-5.0, -1e-3, float("inf"), float("-inf"), -1e200]
    live, out = [], []
    for n in range(360):
        pool = near if n < 160 else near + far if n < 260 else near + far + wide
        if live and rng.random() < 0.3:
            p, v = live.pop(rng.randrange(len(live)))
            out.append((p, v, -1))
        else:
            p, v = (pool[0], 2.0) if n == 0 else (104.0, 1.0) if n == 1 else (rng.choice(pool), float(rng.randint(1, 9)))
            live.append((p, v))
            out.append((p, v, 1))
    return out


@pytest.mark.parametrize("cap", ["on", "4"])
def test_dense_equals_hashed_and_duckdb_as_keys_leave_the_span(monkeypatch, cap):
    """Event by event: the arrays' engine (cap 16 bits, or 4: leaving the arrays while the prices
    are still near) equals the hash-only engine exactly and DuckDB; at the end the index maps
    (read back through rix.unmask, which writes the arrays into the maps) are the same bit for bit."""
    from toaster.runtime.batch import Batch
    from toaster.testing import Oracle, compare_results
    from toaster.types import FLOAT
    comp, dense = _engine(SQL, cap, monkeypatch)
    _, hashed = _engine(SQL, "off", monkeypatch)
    assert "rix.dense.get." in str(dense.llvm_module) and "rix.dense.get." not in str(hashed.llvm_module)
    indexes = [m.name for m in comp.m3.maps if m.name.endswith("_rix")]
    assert len(indexes) == INDEXES
    oracle = Oracle(list(dense.relations.values()))
    q = comp.queries[0]
    try:
        for n, (p, v, sign) in enumerate(_stream(3)):
            b = Batch.from_rows("B", (FLOAT, FLOAT), [(p, v)], [sign])
            for e in (dense, hashed, oracle):
                e.apply(b)
            got = dense.result(q.name)
            assert list(got.rows) == list(hashed.result(q.name).rows), (n, p, sign)
            if n % 7 == 0 or n > 340:
                assert not compare_results(got, oracle.query(comp.oracle_sql[0]), 0), (n, p, sign)
        for name in indexes:
            assert dense.read_map(name) == hashed.read_map(name)
    finally:
        dense.close(), hashed.close(), oracle.close()


ROLLBACK = ("CREATE STREAM B(P float, V int) FROM FILE 'b.csv' LINE DELIMITED CSV;\n"
            "SELECT SUM(b.P * b.V) AS s FROM B b WHERE 0.25 * (SELECT SUM(b3.V) FROM B b3) > "
            "(SELECT SUM(b2.V) FROM B b2 WHERE b2.P > b.P);")


def test_rejected_batch_is_forgotten_by_the_arrays(monkeypatch):
    """A batch that writes the arrays (a new near key moving the leaf level, new counts) and then
    overflows the integer sum is rolled back: the rebuild refills the arrays from the restored
    maps; later batches equal DuckDB, and the index maps a fresh engine's."""
    from toaster.errors import IntegerOverflowError
    from toaster.runtime.batch import Batch
    from toaster.testing import Oracle, compare_results
    from toaster.types import FLOAT, INT

    def rows(rs, signs=None):
        return Batch.from_rows("B", (FLOAT, INT), rs, signs)
    comp, hit = _engine(ROLLBACK, "on", monkeypatch)
    fresh = comp.engine("llvm")
    indexes = [m.name for m in comp.m3.maps if m.name.endswith("_rix")]
    oracle = Oracle(list(hit.relations.values()))
    good = [rows([(100.0, 3), (100.5, 5), (101.0, 2), (100.25, 4)]),
            rows([(100.5, 5), (102.0, 1)], [-1, 1]), rows([(100.75, 6), (101.0, 2), (100.015625, 3)])]
    try:
        for k, b in enumerate(good):
            if k == 1:
                with pytest.raises(IntegerOverflowError):
                    hit.apply(rows([(100.125, 9), (100.0078125, 2 ** 62), (101.5, 4), (100.25, 2 ** 62)]))
            for e in (hit, fresh, oracle):
                e.apply(b)
            assert not compare_results(hit.result(comp.queries[0].name), oracle.query(comp.oracle_sql[0]), 0)
        for name in indexes:
            assert hit.read_map(name) == pytest.approx(fresh.read_map(name))
    finally:
        hit.close(), fresh.close(), oracle.close()
