"""Imperative stage: k3_to_imp, ImpEngine, print_imp and imp_verify.

Oracles: the M3 reference engine (InterpEngine) on hand-built M3 programs, and DuckDB (through
toaster.testing.differential) on SQL queries compiled by the pipeline.
"""
from __future__ import annotations

import glob
import os

import pytest

from toaster.imperative import ir as imp
from toaster.imperative.from_k3 import k3_to_imp
from toaster.imperative.interpreter import ImpEngine
from toaster.imperative.passes import ImpVerifyError, verify_imp
from toaster.imperative.printer import print_imp
from toaster.k3.examples import EXAMPLES
from toaster.k3.from_m3 import m3_to_k3
from toaster.k3.passes import k3_cse, k3_fuse
from toaster.passes import get_pass
from toaster.types import INT, FLOAT, BOOL

from test_k3 import run_against_reference

MODES = ("tuple", "batch")
QUERY_DIR = os.path.join(os.path.dirname(__file__), "queries", "skeleton")


def lower(m3, optimize: bool):
    prog = m3_to_k3(m3)
    if optimize:
        prog = k3_cse(k3_fuse(prog))
    return verify_imp(k3_to_imp(prog))


@pytest.mark.parametrize("example", sorted(EXAMPLES))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("optimize", [False, True])
def test_imp_engine_matches_m3_reference(example, mode, optimize):
    m3 = EXAMPLES[example](mode)
    program = lower(m3, optimize)
    for seed in (1, 2, 3):
        assert run_against_reference(m3, lambda: ImpEngine(program), seed=seed) > 0


def test_three_way_join_shape():
    program = lower(EXAMPLES["three_way_join"]("tuple"), optimize=True)
    assert program.map("M2").indexes == ((0,), (1,))
    assert program.map("M1").indexes == ()
    trig = {t.name: t for t in program.triggers}
    assert set(trig) == {f"on_{k}_{r}" for k in ("insert", "delete") for r in "RST"}
    ins_r = trig["on_insert_R"]
    assert ins_r.params == (imp.LocalRef("a", INT), imp.LocalRef("b", INT))
    # M5[C] += a * M2[b, C]: one ForEach over the slice of M2 with its first key bound to b
    loops = [s for s in ins_r.body if isinstance(s, imp.ForEach)]
    assert len(loops) == 1 and loops[0].map == "M2"
    assert loops[0].pattern[0] == imp.LocalRef("b", INT) and loops[0].pattern[1] is None
    assert loops[0].key_vars[0] is None and loops[0].key_vars[1] is not None
    assert isinstance(loops[0].body[-1], imp.MapAdd) and loops[0].body[-1].map == "M5"


def test_batch_program_has_delta_maps_and_no_params():
    program = lower(EXAMPLES["three_way_join"]("batch"), optimize=True)
    deltas = [m for m in program.maps if m.kind == "delta"]
    assert {m.name for m in deltas} == {imp.delta_map_name(r) for r in "RST"}
    assert all(m.key_types == (INT, INT) and m.value_type == INT for m in deltas)
    assert all(t.params == () and t.name == f"on_batch_{t.event.relation}" for t in program.triggers)


def test_temp_maps_for_group_by_replace_and_self_reads():
    program = lower(EXAMPLES["nested_lift"]("tuple"), optimize=False)
    temps = [m for m in program.maps if m.kind == "temp"]
    assert temps
    for t in program.triggers:
        cleared = set()
        _walk_clears(t.body, cleared)
        # every temp map a trigger fills is cleared in that trigger before use
        assert {m.name for m in temps if _writes(t.body, m.name)} <= cleared


def _walk_clears(stmts, out):
    for s in stmts:
        if isinstance(s, imp.MapClear):
            out.add(s.map)
        for sub in _sub_blocks(s):
            _walk_clears(sub, out)


def _sub_blocks(s):
    if isinstance(s, imp.If):
        return (s.then, s.orelse)
    if isinstance(s, imp.ForEach):
        return (s.body,)
    return ()


def _writes(stmts, name) -> bool:
    return any((isinstance(s, imp.MapAdd) and s.map == name) or any(_writes(b, name) for b in _sub_blocks(s))
               for s in stmts)


def test_float_map_gets_casts():
    """RES is a FLOAT map fed by INT products times 0.5: the int side is Cast, never mixed."""
    program = lower(EXAMPLES["nested_lift"]("batch"), optimize=True)
    text = print_imp(program)
    assert "(float)" in text
    verify_imp(program)  # arithmetic operand types line up


def test_passes_registered():
    for name, takes, gives in (("k3_to_imp", "k3", "imp"), ("imp_verify", "imp", "imp")):
        p = get_pass(name)
        assert (p.takes, p.gives) == (takes, gives)
    prog = get_pass("k3_to_imp")(m3_to_k3(EXAMPLES["three_way_join"]("tuple")))
    assert get_pass("imp_verify")(prog) is prog


def test_printer_c_like():
    text = print_imp(lower(EXAMPLES["three_way_join"]("tuple"), optimize=True))
    assert "void on_insert_R(int a, int b) {" in text
    assert "foreach ([b, int " in text and "in M2) {" in text
    assert "view map M2[int, int] -> int; indexes (0) (1)" in text


# ------------------------------------------------------------------ imp_verify

def _prog(body, params=(), maps=None):
    maps = maps if maps is not None else (imp.MapSpec("M", (INT,), INT), imp.MapSpec("F", (), FLOAT))
    from toaster.m3.ir import Event
    trig = imp.ImpTrigger("on_insert_R", Event("insert", "R", ()), params, tuple(body))
    return imp.ImpProgram((), maps, (trig,), ())


X = imp.LocalRef("x", INT)


@pytest.mark.parametrize("body, message", [
    ([imp.MapAdd("M", (X,), imp.Lit(1, INT))], "not declared"),
    ([imp.MapAdd("N", (imp.Lit(1, INT),), imp.Lit(1, INT))], "unknown map"),
    ([imp.MapAdd("F", (), imp.Lit(1, INT))], "map holds float"),
    ([imp.MapAdd("M", (imp.Lit(1, INT), imp.Lit(2, INT)), imp.Lit(1, INT))], "keys"),
    ([imp.Declare(X, imp.Lit(1, INT)), imp.Declare(X, imp.Lit(2, INT))], "twice"),
    ([imp.Declare(X, imp.BinOp("+", imp.Lit(1, INT), imp.Lit(1.5, FLOAT), FLOAT))], "arithmetic"),
    ([imp.If(imp.Lit(1, INT), ())], "BOOL"),
    ([imp.ForEach("M", (None,), (X,), imp.LocalRef("v", INT), (imp.MapAdd("M", (X,), imp.Lit(1, INT)),))],
     "inside a ForEach"),
    ([imp.ForEach("M", (None,), (X,), imp.LocalRef("v", INT), ()), imp.MapAdd("M", (X,), imp.Lit(1, INT))],
     "not declared"),
])
def test_imp_verify_rejects(body, message):
    with pytest.raises(ImpVerifyError, match=message):
        verify_imp(_prog(body))


def test_imp_verify_accepts_scoped_program():
    v = imp.LocalRef("v", INT)
    body = [imp.ForEach("M", (None,), (X,), v, (imp.If(imp.BinOp(">", v, imp.Lit(0, INT), BOOL),
                                                       (imp.MapAdd("F", (), imp.Cast(FLOAT, v)),)),))]
    verify_imp(_prog(body))


# ------------------------------------------------------- SQL through the pipeline

def _query_files():
    return sorted(glob.glob(os.path.join(QUERY_DIR, "*.sql")))


@pytest.mark.parametrize("path", _query_files(), ids=os.path.basename)
@pytest.mark.parametrize("mode", MODES)
def test_sql_queries_on_imp_engine_match_duckdb(path, mode):
    pytest.importorskip("toaster.pipeline")
    from toaster.testing.differential import run_differential
    from toaster.testing.generator import random_stream
    with open(path) as f:
        sql = f.read()
    report = run_differential(sql, "imp", lambda rels: random_stream(rels, seed=5, n_batches=15, deletes=True),
                              mode=mode)
    assert report.rows_checked > 0


@pytest.mark.parametrize("name", ["rst_sum.sql", "group_filter.sql", "selfjoin_count.sql"])
@pytest.mark.parametrize("mode", MODES)
def test_sql_queries_imp_equals_interp_map_by_map(name, mode):
    pipeline = pytest.importorskip("toaster.pipeline")
    with open(os.path.join(QUERY_DIR, name)) as f:
        comp = pipeline.compile_sql(f.read(), mode=mode)
    m3 = comp.m3
    for optimize in (False, True):
        program = lower(m3, optimize)
        assert run_against_reference(m3, lambda: ImpEngine(program), seed=7) > 0
