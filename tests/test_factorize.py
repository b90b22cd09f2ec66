"""`m3_factorize`: sums kept factorized (one map, one statement where the calculus has one sum).

The pass fires where the tests say so (TPC-H Q3's `price * (1 - discount)`), the rewritten M3
prints and parses back, fused maps hold their definitions (`a + c * b`) after a stream with
deletions, and programs with those sums equal DuckDB after every batch on the engines that
run the local M3 (interp, k3, imp, llvm), in tuple and batch mode, also for generated queries.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toaster.m3.parser import parse_m3
from toaster.pipeline import compile_file, compile_sql
from toaster.testing import run_differential
from toaster.testing.differential import check_maps_hold_definitions
from toaster.testing.generator import random_stream
from toaster.testing.query_gen import DECLARATIONS, rst_streams

Q3 = "tests/queries/tpch/q03.sql"
# Q3's shape over the generator's relations (whose random streams join often)
Q3_LIKE = DECLARATIONS + ("SELECT r.A, SUM(t.D * (1 - r.B)) FROM R r, S s, T t "
                          "WHERE r.B = s.B AND s.C = t.C AND t.D > 1 GROUP BY r.A;")


def _statements(comp, relation: str, kind: str = "insert") -> list:
    return next(t.statements for t in comp.m3.triggers
                if t.event.relation == relation and t.event.kind == kind)


def test_q3_keeps_price_times_one_minus_discount_in_one_map():
    before = compile_file(Q3, skip=("m3_factorize",))
    after = compile_file(Q3)
    assert len(after.m3.maps) == len(before.m3.maps) - 2
    fused = [n for n in after.m3.notes if n.startswith("fused map")]
    assert len(fused) == 2
    # one statement per map written on a LINEITEM insert (was two per map)
    lineitem = _statements(after, "LINEITEM")
    assert len(lineitem) == len({s.target for s in lineitem}) == len(_statements(before, "LINEITEM")) // 2
    text = str(after.m3)
    assert str(parse_m3(text)) == text


def test_skipping_the_pass_keeps_the_expanded_program():
    assert not [n for n in compile_file(Q3, skip=("m3_factorize",)).m3.notes if n.startswith("fused map")]


@pytest.mark.parametrize("backend", ["interp", "k3", "imp", "llvm"])
@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_q3_shape_factorized_matches_duckdb(backend, mode):
    report = run_differential(Q3_LIKE, backend, lambda rels: random_stream(rels, seed=7, deletes=True, n_batches=20,
                                                                        max_batch=8), mode=mode)
    assert report.checks == 20 and report.nonempty_checks > 0


def test_fused_maps_hold_their_definitions():
    """After a stream with deletions, each fused map equals `def(a) + c * def(b)` evaluated over
    the base relations (so a checkpoint or --explain shows what the map holds)."""
    comp = compile_sql(Q3_LIKE)
    fused = {n.split()[4] for n in comp.m3.notes if n.startswith("fused map")}
    assert len(fused) == 1
    stream = random_stream(list(comp.m3.relations), seed=5, deletes=True, n_batches=30, max_batch=8)
    assert check_maps_hold_definitions(comp, "interp", stream, fused) > 0


_TEMPLATES = [
    "SELECT r.A, SUM(r.B * ({k} - s.C)) FROM R r, S s WHERE r.B = s.B GROUP BY r.A",
    "SELECT SUM(r.A * (s.C + {k}) - r.B) FROM R r, S s, T t WHERE r.B = s.B AND s.C = t.C",
    "SELECT s.C, SUM(r.A) - {k} * SUM(r.B) FROM R r, S s WHERE r.B = s.B GROUP BY s.C",
    "SELECT t.D, SUM((r.A - r.B) * ({k} - t.D)) FROM R r, T t WHERE r.A < t.D GROUP BY t.D",
]


@st.composite
def linear_queries(draw):
    return DECLARATIONS + draw(st.sampled_from(_TEMPLATES)).format(k=draw(st.sampled_from(["1", "2", "0.5"]))) + ";"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=linear_queries(), stream=rst_streams(deletes=True), backend=st.sampled_from(["interp", "llvm"]),
       mode=st.sampled_from(["tuple", "batch"]))
def test_linear_combinations_match_duckdb(sql, stream, backend, mode):
    run_differential(sql, backend, stream, mode=mode)


def test_generated_shape_is_factorized():
    sql = DECLARATIONS + _TEMPLATES[0].format(k="1") + ";"
    comp = compile_sql(sql)
    assert any(n.startswith("fused map") for n in comp.m3.notes)
