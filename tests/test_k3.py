"""K3 stage: m3_to_k3 lowering, the K3 interpreter, and the k3 -> k3 passes.

Oracle: the M3 reference engine (toaster.backends.interp.InterpEngine, the calculus evaluator)
run on the same M3 program and the same random insert/delete stream; every materialized map
must agree after every batch. Passes are checked the same way (and against the unoptimized K3).
"""
from __future__ import annotations

import pytest

from toaster.calculus.ir import Const as CConst, MapRef, Prod, Rel, Value, Var as CVar
from toaster.m3.ir import Event, M3Program, MapDecl, Statement, Trigger
from toaster.errors import UnsupportedError
from toaster.k3 import ir as k3
from toaster.k3.examples import EXAMPLES
from toaster.k3.from_m3 import m3_to_k3
from toaster.k3.interpreter import K3Engine
from toaster.k3.passes import K3Fuse, fuse, k3_cse, k3_fuse
from toaster.k3.printer import print_k3
from toaster.k3.rewrites import REWRITES
from toaster.k3.rewrites.terms import subst
from toaster.errors import UsageError
from toaster.passes import REGISTRY, get_pass, parse_spec
from toaster.schema import Column, RelationDecl
from toaster.testing.generator import random_stream
from toaster.testing.oracle import values_equal
from toaster.types import INT

MODES = ("tuple", "batch")
PASS_CHAINS = {
    "none": [],
    "fuse": [k3_fuse],
    "cse": [k3_cse],
    "fuse+cse": [k3_fuse, k3_cse],
}


def maps_agree(got: dict, want: dict) -> list:
    """Keys where two {key: value} maps differ (a missing key equals 0)."""
    return [(k, got.get(k), want.get(k)) for k in set(got) | set(want)
            if not values_equal(got.get(k, 0), want.get(k, 0))]


def run_against_reference(m3: M3Program, make_engine, *, seed: int, n_batches: int = 25) -> int:
    """Feed one random stream to the reference and to make_engine(); compare all views after
    every batch. Returns how many nonzero entries were compared (tests are not vacuous)."""
    interp = pytest.importorskip("toaster.backends.interp")
    ref = interp.InterpEngine(m3)
    eng = make_engine()
    views = [m.name for m in m3.maps]
    compared = 0
    for n, batch in enumerate(random_stream(m3.relations, seed=seed, n_batches=n_batches,
                                            deletes=True, domains={INT: (0, 1, 2, 3)})):
        ref.apply(batch)
        eng.apply(batch)
        for name in views:
            want = ref.read_map(name)
            diff = maps_agree(eng.read_map(name), want)
            assert not diff, f"{name} differs after batch {n}: {diff[:5]}"
            compared += len(want)
    for r in ref.results():
        got = eng.result(r.name).rows
        assert len(got) == len(r.rows), r.name
        for rg, rw in zip(got, r.rows):
            assert all(values_equal(a, b) for a, b in zip(rg, rw)), (r.name, rg, rw)
    return compared


def apply_passes(program, chain):
    for p in chain:
        program = p(program)
    return program


@pytest.mark.parametrize("example", sorted(EXAMPLES))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chain", sorted(PASS_CHAINS))
def test_k3_matches_m3_reference(example, mode, chain):
    m3 = EXAMPLES[example](mode)
    prog = apply_passes(m3_to_k3(m3), PASS_CHAINS[chain])
    for seed in (1, 2):
        assert run_against_reference(m3, lambda: K3Engine(prog), seed=seed) > 0


@pytest.mark.parametrize("rule", list(REWRITES))
def test_each_rewrite_alone_preserves_meaning(rule):
    """Every rule is a law on its own: applied alone (to a fixpoint) it keeps the meaning."""
    for example in sorted(EXAMPLES):
        for mode in MODES:
            m3 = EXAMPLES[example](mode)
            prog = fuse(m3_to_k3(m3), [rule])
            assert run_against_reference(m3, lambda: K3Engine(prog), seed=3, n_batches=15) > 0


def test_passes_are_registered():
    for name in ("k3_fuse", "k3_cse"):
        p = get_pass(name)
        assert (p.takes, p.gives) == ("k3", "k3")
    assert "k3_beta_reduce" not in REGISTRY  # beta is the rule k3_fuse{rules=beta}


@pytest.mark.parametrize("mode", MODES)
def test_fuse_reaches_a_fixpoint_and_reports_no_change_there(mode):
    prog = m3_to_k3(EXAMPLES["three_way_join"](mode))
    fused = fuse(prog)
    assert fused != prog
    assert fuse(fused) is fused
    assert fuse(prog, rules=()) is prog
    assert parse_spec("k3_fuse")[0].run(fused, None) is fused


def test_fuse_selects_rules_by_name():
    prog = m3_to_k3(EXAMPLES["three_way_join"]("tuple"))
    only_beta = fuse(prog, ["beta"])
    assert only_beta is prog  # the lowering makes no lets: beta alone has nothing to do
    assert fuse(prog, ["iterate_of_singleton"]) != prog
    assert parse_spec("k3_fuse{rules=iterate_of_singleton,beta}")[0].rules == ("iterate_of_singleton", "beta")


def test_unknown_rule_names_are_refused_with_the_known_ones():
    prog = m3_to_k3(EXAMPLES["three_way_join"]("tuple"))
    with pytest.raises(KeyError, match="unknown K3 rewrite 'no_such_rule'; known: map_of_singleton, "):
        fuse(prog, ["beta", "no_such_rule"])
    with pytest.raises(UsageError, match="option rules: unknown K3 rewrite 'nope'"):
        parse_spec("k3_fuse{rules=beta,nope}")
    with pytest.raises(UsageError):
        K3Fuse(rules=("nope",))


def test_every_rewrite_states_its_law():
    """The first docstring line is `lhs = rhs: why` (listed by REWRITES[name].law)."""
    for r in REWRITES.values():
        assert r.fn.__doc__.strip().startswith(r.law)
        lhs, eq, rest = r.law.partition(" = ")
        assert eq and lhs and ": " in rest, f"{r.name}: {r.law!r}"


def _nodes(e):
    yield e
    for c in k3.children(e):
        yield from _nodes(c)


def test_fusion_removes_intermediate_collections():
    """After fusion the 3-way-join insert-R trigger streams: no singleton, flatten or nested map."""
    prog = k3_fuse(m3_to_k3(EXAMPLES["three_way_join"]("tuple")))
    trig = next(t for t in prog.triggers if t.name == "on_insert_R")
    kinds = {type(n).__name__ for s in trig.body for n in _nodes(s)}
    assert not kinds & {"Singleton", "Flatten", "Map", "Apply"}, kinds
    # QUERY_1_SUM[] += a * M1[b] is a single update; M5 is one iterate over the slice M2[b, *]
    assert isinstance(trig.body[0], k3.Update)
    it = trig.body[1]
    assert isinstance(it, k3.Iterate) and isinstance(it.coll, k3.Slice)
    assert it.coll.map == "M2" and it.coll.pattern[1] is None and it.coll.pattern[0] == k3.Var("b", INT)
    raw = m3_to_k3(EXAMPLES["three_way_join"]("tuple"))
    raw_kinds = {type(n).__name__ for t in raw.triggers for s in t.body for n in _nodes(s)}
    assert {"Singleton", "Flatten", "Map"} <= raw_kinds  # the passes did the work


def test_self_reading_statement_goes_through_a_temp_map():
    prog = m3_to_k3(EXAMPLES["nested_lift"]("tuple"))
    temps = [m for m in prog.maps if m.kind == "temp"]
    assert temps and all(m.name.startswith("TMP") for m in temps)


def test_batch_mode_declares_delta_maps():
    prog = m3_to_k3(EXAMPLES["three_way_join"]("batch"))
    deltas = {m.name: m for m in prog.maps if m.kind == "delta"}
    assert set(deltas) == {"DELTA_R", "DELTA_S", "DELTA_T"}
    assert deltas["DELTA_R"].key_types == (INT, INT) and deltas["DELTA_R"].value_type == INT
    assert [t.name for t in prog.triggers] == ["on_batch_R", "on_batch_S", "on_batch_T"]


def test_base_relation_in_statement_is_unsupported():
    R = RelationDecl("R", (Column("A", INT),), "stream")
    a, A = CVar("a", INT), CVar("A", INT)
    m3 = M3Program((R,), (MapDecl("M", (), INT, Rel("R", (A,))),),
                   (Trigger(Event("insert", "R", (a,)), (Statement("M", (), "+=", Rel("R", (A,))),)),), ())
    with pytest.raises(UnsupportedError, match="base relation R"):
        m3_to_k3(m3)


def test_unbound_statement_key_is_unsupported():
    R = RelationDecl("R", (Column("A", INT),), "stream")
    a, B = CVar("a", INT), CVar("B", INT)
    m3 = M3Program((R,), (MapDecl("M", (B,), INT, Rel("R", (B,))),),
                   (Trigger(Event("insert", "R", (a,)), (Statement("M", (B,), "+=", Value(a)),)),), ())
    with pytest.raises(UnsupportedError, match="statement key B"):
        m3_to_k3(m3)


def test_sideways_binding_left_to_right():
    """M[x] * N[x] binds x in the first factor (slice) and looks it up in the second."""
    R = RelationDecl("R", (Column("A", INT),), "stream")
    a, X = CVar("a", INT), CVar("X", INT)
    m3 = M3Program((R,), (MapDecl("M", (X,), INT, Rel("R", (X,))), MapDecl("Q", (), INT, Rel("R", (X,)))),
                   (Trigger(Event("insert", "R", (a,)), (
                       Statement("Q", (), "+=", Prod((MapRef("M", (X,), INT), MapRef("M", (X,), INT)))),
                       Statement("M", (a,), "+=", Value(CConst(1, INT))))),), ())
    prog = k3_fuse(m3_to_k3(m3))
    it = prog.triggers[0].body[0]
    assert isinstance(it, k3.Iterate) and isinstance(it.coll, k3.Slice) and it.coll.pattern == (None,)
    looked = [n for n in _nodes(it.fn.body) if isinstance(n, k3.Lookup)]
    assert looked and looked[0].keys == (k3.Var("X", INT),)
    eng = K3Engine(prog)
    for v in (1, 1, 2):
        eng.insert("R", (v,))
    # Q accumulates sum over x of M[x]^2 before each insert: 0, 1, 4
    assert eng.read_map("Q") == {(): 5}


def test_substitution_avoids_capture():
    x, y = k3.Var("x", INT), k3.Var("y", INT)
    lam = k3.Lambda((y,), k3.BinOp("+", x, y, INT))
    out = subst(lam, {"x": y})
    assert isinstance(out, k3.Lambda)
    (p,) = out.params
    assert p.name != "y" and out.body == k3.BinOp("+", y, p, INT)


def test_printer_is_deterministic_and_readable():
    for mode in MODES:
        prog = m3_to_k3(EXAMPLES["three_way_join"](mode))
        text = print_k3(prog)
        assert text == print_k3(m3_to_k3(EXAMPLES["three_way_join"](mode)))
        assert "slice M2[" in text and "trigger on_" in text
        fused = print_k3(k3_fuse(prog))
        assert len(fused) < len(text)


# ------------------------------------------------- rules no M3 lowering reaches (no M3 fixture)

def _eval(e):
    from toaster.k3.interpreter import K3Interpreter
    return K3Interpreter({}).eval(e, {})


@pytest.mark.parametrize("rule, expr", [
    ("filter_of_empty", k3.Filter(k3.Lambda((k3.Var("x", INT),), k3.BinOp(">", k3.Var("x", INT), k3.Const(0, INT), INT)),
                                  k3.Empty(k3.CollType(k3.TupleType((INT,)))))),
    ("fold_of_empty", k3.Aggregate(k3.Lambda((k3.Var("acc", INT), k3.Var("x", INT)),
                                             k3.BinOp("+", k3.Var("acc", INT), k3.Var("x", INT), INT)),
                                   k3.Const(7, INT), k3.Empty(k3.CollType(k3.TupleType((INT,)))))),
])
def test_rules_on_hand_built_k3(rule, expr):
    out = REWRITES[rule](expr)
    assert out is not None and out != expr
    assert _eval(out) == _eval(expr)
    assert all(REWRITES[r](expr) is None for r in REWRITES if r != rule)  # no other rule takes it
