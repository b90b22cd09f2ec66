"""The view caches of `m3_view_cache` (range-correlated nested aggregates, VLDBJ'14 §5.2).

Every program is checked against DuckDB after every batch on the engines that run the local
M3 (interp, k3, imp, llvm), with deletions; the pass must have fired where the tests say so,
the rewritten M3 must print and parse back, and programs it cannot keep exact stay unchanged.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toaster.calculus.ir import AggSum, Cmp, Lift, Prod, subterms
from toaster.m3.parser import parse_m3
from toaster.pipeline import compile_file, compile_sql
from toaster.testing import run_differential
from toaster.testing.differential import check_maps_hold_definitions
from toaster.testing.generator import random_stream
from toaster.testing.query_gen import DECLARATIONS, rst_streams

FINANCE = "tests/queries/finance"
# m3_range_index (tests/test_range_index.py) takes the finance shapes first: these tests check the
# view caches, the baseline it replaces, with it left out
NOINDEX = ("m3_range_index",)


def _compile_noindex(text, mode="tuple"):
    return compile_sql(text, mode=mode, skip=NOINDEX)


def _lifts(e):
    return [a for a in _walk(e) if isinstance(a, Lift)]


def _walk(e):
    yield e
    for child in getattr(e, "factors", ()) or getattr(e, "terms", ()):
        yield from _walk(child)
    if isinstance(e, (AggSum, Lift)):
        yield from _walk(e.expr)


def _caches(comp) -> list[str]:
    return [m.name for m in comp.m3.maps if "_cache" in m.name]


@pytest.mark.parametrize("query,caches", [("vwap", 2), ("mst", 4)])
def test_finance_queries_get_view_caches(query, caches):
    comp = compile_file(f"{FINANCE}/{query}.sql", skip=NOINDEX)
    assert len(_caches(comp)) == caches
    reeval = [s for t in comp.m3.triggers for s in t.statements if s.op == ":="]
    assert reeval and all("_cache" in str(s.rhs) for s in reeval)
    # no nested loop is left inside the re-evaluation: every lifted range sum became a lookup
    assert not any(isinstance(a, Cmp) for s in reeval for lift in _lifts(s.rhs) for a in subterms(lift.expr))
    text = str(comp.m3)
    assert str(parse_m3(text)) == text
    assert any("view cache" in n for n in comp.m3.notes)


def test_skipping_the_pass_gives_the_nested_loops_back():
    comp = compile_file(f"{FINANCE}/vwap.sql", skip=NOINDEX + ("m3_view_cache",))
    assert _caches(comp) == []


def test_batch_mode_has_no_caches_but_decomposes():
    comp = compile_file(f"{FINANCE}/mst.sql", mode="batch", skip=NOINDEX)
    assert _caches(comp) == []
    reeval = next(s for t in comp.m3.triggers for s in t.statements if s.op == ":=" and s.target == "MST")
    # the ask side and the bid side are two loops, multiplied, not one nested loop
    first = reeval.rhs.expr.terms[0]
    assert isinstance(first, Prod) and len(first.factors) == 2
    assert all(isinstance(f, AggSum) for f in first.factors)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_batch_mode_decomposition_matches_duckdb(backend):
    with open(f"{FINANCE}/mst.sql") as f:
        sql = f.read()
    report = run_differential(sql, backend, lambda rels: random_stream(rels, seed=3, deletes=True, n_batches=15,
                                                                        max_batch=20), mode="batch",
                            compile=_compile_noindex)
    assert report.checks == 15


@pytest.mark.parametrize("backend", ["interp", "k3", "imp", "llvm"])
@pytest.mark.parametrize("query", ["vwap", "mst"])
def test_finance_with_caches_matches_duckdb(backend, query):
    with open(f"{FINANCE}/{query}.sql") as f:
        sql = f.read()
    for seed in (1, 2):
        report = run_differential(sql, backend, lambda rels: random_stream(rels, seed=seed, deletes=True,
                                                                            n_batches=25, max_batch=6),
                                  compile=_compile_noindex)
        assert report.checks == 25


_TEMPLATES = [
    # correlated by a range on another relation, outer aggregate grouped
    "SELECT r.A, SUM(r.B) FROM R r WHERE r.B {cmp} (SELECT {agg} FROM S s WHERE s.B {rng} r.A) GROUP BY r.A",
    # self-correlated (the VWAP shape)
    "SELECT SUM(r.A * r.B) FROM R r WHERE {k} * (SELECT SUM(r3.B) FROM R r3) {cmp} "
    "(SELECT {agg2} FROM R r2 WHERE r2.A {rng} r.A)",
    # two correlations and an equality beside the range
    "SELECT COUNT(*) FROM R r, T t WHERE r.A {cmp} (SELECT {agg} FROM S s WHERE s.B {rng} r.B AND s.C = t.C)",
]


@st.composite
def range_queries(draw):
    template = draw(st.sampled_from(_TEMPLATES))
    sql = template.format(cmp=draw(st.sampled_from(["<", "<=", ">", ">=", "="])),
                          rng=draw(st.sampled_from(["<", "<=", ">", ">=", "<>"])),
                          agg=draw(st.sampled_from(["SUM(s.C)", "COUNT(*)", "SUM(s.B * s.C)"])),
                          agg2=draw(st.sampled_from(["SUM(r2.B)", "COUNT(*)"])),
                          k=draw(st.sampled_from(["1", "0.5", "2"])))
    return DECLARATIONS + sql + ";"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=range_queries(), stream=rst_streams(deletes=True), backend=st.sampled_from(["interp", "llvm"]))
def test_range_correlated_queries_match_duckdb(sql, stream, backend):
    run_differential(sql, backend, stream, compile=_compile_noindex)


@pytest.mark.parametrize("template", _TEMPLATES[:2])
def test_generated_shapes_are_cached(template):
    sql = DECLARATIONS + template.format(cmp="<", rng=">", agg="SUM(s.C)", agg2="COUNT(*)", k="0.5") + ";"
    assert _caches(compile_sql(sql, skip=NOINDEX))


@pytest.mark.parametrize("query", ["vwap", "mst"])
def test_caches_hold_their_definitions(query):
    """After a stream with deletions, every cache and domain map equals its calculus definition
    evaluated over the base relations (so a checkpoint or --explain shows what the map means)."""
    comp = compile_file(f"{FINANCE}/{query}.sql", skip=NOINDEX)
    added = {m.name for m in comp.m3.maps if "_cache" in m.name or "_dom" in m.name}
    assert any("_cache" in n for n in added)
    stream = random_stream(list(comp.m3.relations), seed=5, deletes=True, n_batches=20, max_batch=6)
    assert check_maps_hold_definitions(comp, "interp", stream, added) > 0


@pytest.mark.parametrize("query", ["some", "not_exists", "in_subquery_correlated"])
def test_equality_correlation_through_a_map_key_is_not_cached(query):
    """Under strategy naive the nested map is keyed by an outer variable too (S_mT1[R_B, T_D] with
    R_B bound outside): a cache keyed by the range variable alone would be wrong."""
    comp = compile_file(f"tests/queries/features/{query}.sql", strategy="naive")
    assert _caches(comp) == []
    with open(f"tests/queries/features/{query}.sql") as f:
        sql = f.read()
    run_differential(sql, "interp", lambda rels: random_stream(rels, seed=4, deletes=True, n_batches=30),
                     compile=lambda text, mode: compile_sql(text, mode=mode, strategy="naive"))
