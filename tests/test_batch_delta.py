"""m3_batch_delta (Hot Dog §5 batch pre-processing): batch deltas filtered, projected and
pre-aggregated once per batch, statements reading the aggregated delta maps; results equal
DuckDB's after every batch on every local backend."""
from __future__ import annotations

from pathlib import Path

import pytest

import toaster.m3.batch_delta  # noqa: F401  (registers the pass)
from toaster.calculus.ir import DeltaRel, MapRef, Prod, Sum, AggSum
from toaster.m3.batch_delta import is_delta_map
from toaster.m3.parser import parse_m3
from toaster.pipeline import compile_sql
from toaster.testing import check_compilation, random_stream
from test_query_suite import suite_stream

QUERIES = Path(__file__).resolve().parent / "queries"
ADD = [("m3_batch_delta", "calc_to_m3")]


ROOT = str(QUERIES.parent.parent)  # INCLUDE paths are written from the repository root


def _read(rel: str) -> str:
    return (QUERIES / rel).read_text()


def _compile(rel: str, **kw):
    return compile_sql(_read(rel), mode="batch", add=ADD, base_dir=ROOT, **kw)


def _delta_reads(e) -> int:
    match e:
        case DeltaRel():
            return 1
        case AggSum(_, q):
            return _delta_reads(q)
        case Sum(ts) | Prod(ts):
            return sum(_delta_reads(t) for t in ts)
    return 0


def _maps_in(e) -> list:
    match e:
        case MapRef(n, _, _):
            return [n]
        case AggSum(_, q):
            return _maps_in(q)
        case Sum(ts) | Prod(ts):
            return [n for t in ts for n in _maps_in(t)]
    return []


def test_q6_delta_map_has_no_keys():
    m3 = _compile("tpch/q06.sql").m3
    deltas = [m for m in m3.maps if is_delta_map(m)]
    assert [len(m.keys) for m in deltas] == [0]
    (trig,) = [t for t in m3.triggers if t.event.relation == "LINEITEM"]
    fill, update = trig.statements
    assert fill.op == ":=" and fill.target == deltas[0].name
    assert update.target == "REVENUE" and _delta_reads(update.rhs) == 0
    assert _maps_in(update.rhs) == [deltas[0].name]


def test_q3_lineitem_deltas_projected_to_orderkey_and_revenue_one_statement():
    m3 = _compile("tpch/q03.sql").m3
    (trig,) = [t for t in m3.triggers if t.event.relation == "LINEITEM"]
    fills = [s for s in trig.statements if s.op == ":="]
    assert fills and all([k.name for k in s.keys] == ["LINEITEM_L_ORDERKEY"] for s in fills)
    # (1 - discount) * price: one statement, one delta map holding the difference
    assert sum(1 for s in trig.statements if s.target == "REVENUE") == 1
    assert all(_delta_reads(s.rhs) == 0 for s in trig.statements if s.op == "+=")


def test_bsv_self_join_reads_aggregated_deltas():
    m3 = _compile("finance/bsv.sql").m3
    (trig,) = [t for t in m3.triggers if t.event.relation == "BIDS"]
    deltas = {m.name: m for m in m3.maps if is_delta_map(m)}
    assert deltas and all([k.type.name for k in m.keys] == ["INT"] for m in deltas.values())
    for st in trig.statements:
        if st.op == "+=":
            assert _delta_reads(st.rhs) == 0
    # the ΔR⋈ΔR term: a product of two delta-map lookups on the broker
    bsv = [s for s in trig.statements if s.target == "BSV"]
    assert len(bsv) == 1
    assert sum(1 for n in _maps_in(bsv[0].rhs) if n in deltas) >= 3


def test_tuple_mode_unchanged():
    sql = _read("finance/bsv.sql")
    base = compile_sql(sql, mode="tuple", base_dir=ROOT).m3
    assert compile_sql(sql, mode="tuple", add=ADD, base_dir=ROOT).m3 == base


@pytest.mark.parametrize("rel", ["tpch/q03.sql", "finance/bsv.sql", "finance/vwap.sql"])
def test_m3_text_parses_back(rel):
    m3 = _compile(rel).m3
    assert parse_m3(str(m3)) == m3


CASES = ["tpch/q01.sql", "tpch/q03.sql", "tpch/q06.sql", "tpch/q17.sql", "finance/bsv.sql", "finance/bsp.sql",
         "finance/vwap.sql", "finance/axf.sql", "finance/mst.sql", "skeleton/selfjoin_count.sql",
         "skeleton/join_group.sql", "skeleton/minmax_avg.sql", "skeleton/nonequi_join.sql"]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("rel", CASES)
def test_pre_aggregated_batches_match_duckdb(rel, backend):
    comp = _compile(rel)
    path = QUERIES / rel
    if path.parent.name == "skeleton":
        seed = sum(map(ord, rel))
        stream = lambda rels: random_stream(rels, seed=seed, deletes=True, n_batches=12, max_batch=25)  # noqa: E731
    else:  # the suite's streams: domains narrow enough that the TPC-H conditions hold
        stream = lambda rels: suite_stream(path, comp, rels)  # noqa: E731
    report = check_compilation(comp, backend, stream, mode="batch")
    assert report.nonempty_checks >= 1
