"""Memoized range-index reads in llvm (toaster/backends/llvm/range_memo.py, helper fin9).

An interval or descent whose index (group) was not written since the same read with the same
arguments returns that read's answer: MST's per-broker intervals and the other book's descents.
Checked: the plan reads through the memo (and TOASTER_RIX_MEMO=off gives the plain reads back),
memo on equals memo off bit for bit after every batch of an order book with deletions and
DuckDB, and a rejected batch's reads are forgotten with its rollback. Also: a K3 group-by binds
a field once (MST's per-broker intervals were computed twice per broker).
"""
from __future__ import annotations

import pytest

from toaster.pipeline import compile_sql

FINANCE = "tests/queries/finance"


def _sql(query: str) -> str:
    with open(f"{FINANCE}/{query}.sql") as f:
        return f.read()


def _engine(text, memo: str, monkeypatch):
    monkeypatch.setenv("TOASTER_RIX_MEMO", memo)
    comp = compile_sql(text, mode="tuple")
    return comp, comp.engine("llvm")


def test_mst_reads_through_the_memo_and_the_switch_turns_it_off(monkeypatch):
    from toaster.errors import UsageError
    _, on = _engine(_sql("mst"), "on", monkeypatch)
    _, off = _engine(_sql("mst"), "off", monkeypatch)
    try:
        ir_on, ir_off = str(on.llvm_module), str(off.llvm_module)
        # the per-broker indexes' intervals and the ungrouped indexes' descents
        assert '@"rix.imemo.MST_mBIDS8_rix"' in ir_on and '@"rix.imemo.MST_mBIDS9_rix"' in ir_on
        assert '@"rix.bmemo.MST_mASKS4_rix"' in ir_on and '@"rix.bmemo.MST_mBIDS2_rix"' in ir_on
        assert "rix.imemo." not in ir_off and "rix.bmemo." not in ir_off
    finally:
        on.close(), off.close()
    monkeypatch.setenv("TOASTER_RIX_MEMO", "maybe")
    with pytest.raises(UsageError):
        compile_sql(_sql("mst"), mode="tuple").engine("llvm")


def test_group_by_binds_each_field_once():
    """MST's per-broker loop read rix_interval twice per broker (the group key's binding of every
    field, then the sum's): each index is read once per tuple trigger."""
    from toaster.imperative.printer import print_imp
    imp = print_imp(compile_sql(_sql("mst"), mode="tuple").stage("imp"))
    triggers = imp.count("void on_insert_") + imp.count("void on_delete_")
    for idx in ("MST_mBIDS8_rix", "MST_mBIDS9_rix"):
        assert imp.count(f'rix_interval:int("{idx}"') + imp.count(f'rix_interval:float("{idx}"') == triggers


@pytest.mark.parametrize("query", ["fin_mst", "fin_vwap"])
def test_memo_equals_plain_reads_on_an_order_book(tmp_path, monkeypatch, query):
    """The order book (BIDS and ASKS inserts and deletes, prices of one binade) event by event:
    memo on equals memo off exactly after every event, and DuckDB at the end."""
    from bench.finance import generate_finance_stream
    from bench.harness import ExpectedResults, check_results, find_query, stream_relations
    from bench.stream import load_event_stream
    si = generate_finance_stream(str(tmp_path / "book"), events=500, seed=5, brokers=4, book_size=30)
    es = load_event_stream(si.schema_sql())
    text = si.schema_sql() + "\n" + find_query(query).text
    rels, comp0 = stream_relations(text)
    rels &= set(es.stream_names)
    comp, on = _engine(text, "on", monkeypatch)
    _, off = _engine(text, "off", monkeypatch)
    try:
        assert "rix.imemo." in str(on.llvm_module)
        n = 0
        for group in es.batches(1, rels):
            for b in group:
                on.apply(b), off.apply(b)
                n += 1
                for q in comp.queries:
                    assert list(on.result(q.name).rows) == list(off.result(q.name).rows), (q.name, n)
        expected = ExpectedResults(es, list(comp0.m3.relations), rels, tuple(comp0.oracle_sql))(es.count(rels))
        assert n == es.count(rels) > 200 and check_results(on.results(), expected, list(comp.queries)) is None
    finally:
        on.close(), off.close()


# the bounds read V, the view sums W: a batch rejected for W's overflow leaves every bound as it was
GROUPED = ("CREATE STREAM B(P int, V int, W int, G int) FROM FILE 'b.csv' LINE DELIMITED CSV;\n"
           "SELECT b.G, SUM(b.W) AS s FROM B b WHERE 0.25 * (SELECT SUM(b3.V) FROM B b3) > "
           "(SELECT SUM(b2.V) FROM B b2 WHERE b2.P > b.P) GROUP BY b.G;")


def test_rejected_batch_forgets_its_reads(monkeypatch):
    """A rejected batch reads every group's interval (memos filled from its state) and is rolled
    back; the later batches keep the bounds (volume 0 below the top price) and write group 2 only,
    so groups 0 and 1 would repeat the rejected state's answers if the rollback kept the memos:
    after every batch the view equals DuckDB and the engine without memo."""
    from toaster.errors import IntegerOverflowError
    from toaster.runtime.batch import Batch
    from toaster.testing import Oracle, compare_results
    from toaster.types import INT

    def rows(rs):
        return Batch.from_rows("B", (INT, INT, INT, INT), rs)
    comp, on = _engine(GROUPED, "on", monkeypatch)
    _, off = _engine(GROUPED, "off", monkeypatch)
    assert "rix.imemo." in str(on.llvm_module)
    oracle = Oracle(list(on.relations.values()))
    q = comp.queries[0]
    # (P, V, W, G): prices 19..24 hold the top quarter of the volume
    first = rows([(p, 1 + p % 4, p, p % 3) for p in range(1, 25)])
    rejected = rows([(22, 0, 5, 1), (21, 0, 2 ** 62, 0), (23, 0, 2 ** 62, 0)])
    later = [rows([(1, 0, 7, 2)]), rows([(2, 0, 3, 2)]), rows([(20, 0, 4, 2)])]
    try:
        for e in (on, off, oracle):
            e.apply(first)
        for e in (on, off):
            with pytest.raises(IntegerOverflowError):
                e.apply(rejected)
        for b in later:
            for e in (on, off, oracle):
                e.apply(b)
            got = on.result(q.name)
            assert list(got.rows) == list(off.result(q.name).rows)
            assert not compare_results(got, oracle.query(comp.oracle_sql[0]), len(q.key_columns))
    finally:
        on.close(), off.close(), oracle.close()
