"""Distributed M3: partitioning, tagging, the Fig. 3/4 simplifier, single-transformer form and
block fusion, the printer, and the generated program run on a simulated cluster (lists of
per-partition dicts instead of RDDs) against the reference InterpEngine — no Spark needed."""
from __future__ import annotations

import ast
import random

import pytest

from toaster.backends.interp import InterpEngine
from toaster.dist.parser import parse_dist
from toaster.dist.printer import print_dist
from toaster.backends.spark import worker
from toaster.dist.blocks import dist_blocks, dist_fuse, fuse_blocks
from toaster.backends.spark.codegen import dist_to_spark
from toaster.dist.ir import (LOCAL, RANDOM, Dist, Local, Random, Replicated, DistMap, DistStatement, Exchange, Block,
                                            Repart, Scatter, Gather, IllFormed, tag_of, verify, transformer_count)
from toaster.backends.spark.engine import load_program_module
from toaster.dist.placement import m3_to_dist, choose_partitioning
from toaster.dist.simplify import dist_simplify, simplify_expr
from toaster.calculus import ir as C
from toaster.m3.ir import M3Program, MapDecl, Trigger, Event, Statement
from toaster.errors import UnsupportedError
from toaster.passes import Options, get_pass
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.schema import RelationDecl, Column, QueryResult, ResultColumn
from toaster.testing import random_stream
from toaster.types import INT

OPTS = Options(mode="batch")
A, B, C_, D = (C.Var(n, INT) for n in "ABCD")

GROUP_SUM = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT B, SUM(A) FROM R WHERE A > 2 GROUP BY B;"""
JOIN3 = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
CREATE STREAM S(B int, C int) FROM FILE 's.csv' LINE DELIMITED csv;
CREATE STREAM T(C int, D int) FROM FILE 't.csv' LINE DELIMITED csv;
SELECT SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C;"""
SELF_JOIN = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT COUNT(*) FROM R r1, R r2 WHERE r1.B = r2.B;"""
NESTED = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
CREATE STREAM S(B int, C int) FROM FILE 's.csv' LINE DELIMITED csv;
SELECT R.B, SUM(R.A * S.C) FROM R, S WHERE R.B = S.B AND S.C < 3 GROUP BY R.B;"""
GLOBAL_SUM = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT SUM(A * B) FROM R WHERE A > 2 AND B < 8;"""


def hand_group_sum() -> M3Program:
    """SELECT B, SUM(A) FROM R GROUP BY B, written by hand (the brief's example)."""
    rel = RelationDecl("R", (Column("A", INT), Column("B", INT)), "stream")
    q = MapDecl("Q", (B,), INT, C.AggSum((B,), C.Prod((C.Rel("R", (A, B)), C.Value(A)))), role="query")
    st = Statement("Q", (B,), "+=", C.AggSum((B,), C.Prod((C.DeltaRel("R", (A, B)), C.Value(A)))))
    res = QueryResult("QUERY_1", (ResultColumn("B", INT),), (ResultColumn("S", INT),), ("Q",))
    return M3Program((rel,), (q,), (Trigger(Event("batch", "R"), (st,)),), (res,), mode="batch")


# ------------------------------------------------------------------ printer

def test_printer_golden_text_of_every_stage():
    tagged = m3_to_dist(hand_group_sum())
    assert print_dist(tagged).splitlines()[3:] == [
        "MAP Q[B:int]: int @ Dist(0);",
        "",
        "DECLARE RESULT QUERY_1 KEYS (B:int) VALUES (S:int FROM Q);",
        "",
        "ON BATCH R {",
        "  BLOCK dist {",
        "    Q[B] += Scatter[B](AggSum([B], ((DELTA R)(A, B) * {A}))) @ Dist(B);",
        "  }",
        "}",
    ]
    blocks = dist_blocks(dist_simplify(tagged, OPTS), OPTS)
    text = print_dist(blocks)
    assert "TEMP TMP_1[B:int]: int @ Local;" in text
    assert "TEMP TMP_2[B:int]: int @ Dist(0);" in text
    body = text[text.index("ON BATCH R"):].splitlines()
    assert body == [
        "ON BATCH R {",
        "  BLOCK local {",
        "    TMP_1[B] := AggSum([B], ((DELTA R)(A, B) * {A})) @ Local;",
        "  }",
        "  BLOCK exchange {",
        "    TMP_2 := Scatter[0](TMP_1);",
        "  }",
        "  BLOCK dist {",
        "    Q[B] += TMP_2[B] @ Dist(B);",
        "  }",
        "}",
    ]


def test_passes_are_registered_with_their_stages():
    for name, takes, gives in [("m3_to_dist", "m3", "dist"), ("dist_simplify", "dist", "dist"),
                               ("dist_blocks", "dist", "dist"), ("dist_fuse", "dist", "dist"),
                               ("dist_to_spark", "dist", "spark")]:
        p = get_pass(name)
        assert (p.takes, p.gives) == (takes, gives)


# ------------------------------------------------------------- partitioning

def test_partitioning_follows_the_batch_and_keyless_maps_are_local():
    m3 = compile_sql(JOIN3, mode="batch").m3
    tags = choose_partitioning(m3, {})
    for m in m3.maps:
        if not m.keys:
            assert tags[m.name] == LOCAL
        else:
            assert isinstance(tags[m.name], Dist) and len(tags[m.name].parts) == 1


def test_partitioning_override_and_errors():
    m3 = hand_group_sum()
    assert choose_partitioning(m3, {"Q": "local"})["Q"] == LOCAL
    assert choose_partitioning(m3, {"Q": [0]})["Q"] == Dist((0,))
    with pytest.raises(UnsupportedError):
        choose_partitioning(m3, {"Q": [3]})
    with pytest.raises(UnsupportedError):
        choose_partitioning(m3, {"NOPE": "local"})
    with pytest.raises(UnsupportedError):
        m3_to_dist(compile_sql(GROUP_SUM, mode="tuple").m3)


# -------------------------------------------------------------- tagging

MAPS = {"MA": DistMap("MA", (A, B), INT, Dist((0,))), "MB": DistMap("MB", (A, B), INT, Dist((1,))),
        "L": DistMap("L", (A,), INT, LOCAL)}


def test_tag_inference_and_ill_formed_mixes():
    ma, mb, loc = C.MapRef("MA", (A, B), INT), C.MapRef("MB", (A, B), INT), C.MapRef("L", (A,), INT)
    assert tag_of(ma, MAPS) == Dist((A,))
    assert tag_of(C.AggSum((B,), ma), MAPS) == RANDOM
    assert tag_of(C.AggSum((A,), ma), MAPS) == Dist((A,))
    assert tag_of(C.Prod((ma, C.Value(B))), MAPS) == Dist((A,))
    assert tag_of(Gather(mb), MAPS) == LOCAL
    with pytest.raises(IllFormed):
        tag_of(C.Prod((ma, mb)), MAPS)
    with pytest.raises(IllFormed):
        tag_of(C.Prod((ma, loc)), MAPS)
    with pytest.raises(IllFormed):
        tag_of(Scatter((A,), ma), MAPS)
    assert tag_of(C.Prod((ma, Repart((A,), mb))), MAPS) == Dist((A,))


def test_nested_aggregate_at_a_bound_partition_variable_stays_on_its_partition():
    """MA is partitioned by A: SUM over MA at a bound A reads one partition (placement may run it
    there, next to the outer MA); at an unbound A it spans the partitions (Random)."""
    ma = C.MapRef("MA", (A, B), INT)
    inner = C.Lift(C_, C.AggSum((), C.MapRef("MA", (A, D), INT)))
    assert tag_of(C.Prod((ma, inner)), MAPS) == Dist((A,))
    assert tag_of(C.AggSum((), C.MapRef("MA", (A, D), INT)), MAPS) == RANDOM
    with pytest.raises(IllFormed):
        tag_of(C.Prod((C.Value(B), inner)), MAPS)       # A is not bound there: a join over Random


# ------------------------------------------------------------- simplifier

def _simp(e):
    return simplify_expr(e, MAPS)


@pytest.mark.parametrize("before, after", [
    # Fig. 4
    (lambda ma, mb, l: Repart((A,), ma), lambda ma, mb, l: ma),
    (lambda ma, mb, l: Gather(l), lambda ma, mb, l: l),
    (lambda ma, mb, l: Repart((A,), Repart((B,), mb)), lambda ma, mb, l: Repart((A,), mb)),
    (lambda ma, mb, l: Repart((B,), Scatter((A,), l)), lambda ma, mb, l: Scatter((B,), l)),
    (lambda ma, mb, l: Gather(Repart((A,), mb)), lambda ma, mb, l: Gather(mb)),
    (lambda ma, mb, l: Gather(Scatter((A,), l)), lambda ma, mb, l: l),
    (lambda ma, mb, l: Scatter((A,), Gather(mb)), lambda ma, mb, l: Repart((A,), mb)),
    # through an AggSum (Fig. 3 moves the outer transformer through Sum)
    (lambda ma, mb, l: Gather(C.AggSum((A,), Repart((A,), mb))), lambda ma, mb, l: Gather(C.AggSum((A,), mb))),
    # Fig. 3 right to left inside a product
    (lambda ma, mb, l: C.Prod((Scatter((A,), l), Scatter((A,), C.MapRef("L", (A,), INT)), ma)),
     lambda ma, mb, l: C.Prod((Scatter((A,), C.Prod((l, C.MapRef("L", (A,), INT)))), ma))),
    (lambda ma, mb, l: C.Prod((Scatter((A,), l), ma, C.Value(A))),
     lambda ma, mb, l: C.Prod((Scatter((A,), C.Prod((l, C.Value(A)))), ma))),
])
def test_simplifier_rules(before, after):
    args = (C.MapRef("MA", (A, B), INT), C.MapRef("MB", (A, B), INT), C.MapRef("L", (A,), INT))
    got = _simp(before(*args))
    assert got == after(*args)
    assert transformer_count(got) < transformer_count(before(*args)) or isinstance(got, C.Prod)


def test_simplifier_keeps_needed_transformers_and_pure_factors_it_cannot_move():
    mb = C.MapRef("MB", (A, B), INT)
    assert _simp(Repart((A,), mb)) == Repart((A,), mb)
    e = C.Prod((Scatter((A,), C.MapRef("L", (A,), INT)), C.MapRef("MA", (A, B), INT), C.Value(B)))
    assert _simp(e) == e      # {B} needs B, which only MA binds


@pytest.mark.parametrize("sql", [GROUP_SUM, JOIN3, SELF_JOIN, NESTED, GLOBAL_SUM])
def test_every_stage_is_well_formed_and_simplify_never_adds_transformers(sql):
    m3 = compile_sql(sql, mode="batch").m3
    tagged = m3_to_dist(m3)
    simple = dist_simplify(tagged, OPTS)
    verify(tagged)
    verify(simple)
    count = lambda p: sum(transformer_count(i.stmt.rhs) for t in p.triggers for b in t.blocks for i in b.items)
    assert count(simple) <= count(tagged)
    final = dist_blocks(simple, OPTS)
    verify(final)
    for t in final.triggers:     # single-transformer form: no transformer left inside statements
        for b in t.blocks:
            for i in b.items:
                assert isinstance(i, Exchange) == (b.mode == "exchange")
                if isinstance(i, DistStatement):
                    assert transformer_count(i.stmt.rhs) == 0


# ------------------------------------------------------------ block fusion

def _st(target, reads, loc=LOCAL):
    rhs = C.Prod(tuple(C.MapRef(r, (), INT) for r in reads)) if reads else C.ONE
    return DistStatement(Statement(target, (), "+=", rhs), loc)


def test_block_fusion_merges_commuting_blocks_and_respects_dependencies():
    d = Dist((A,))
    blocks = [Block("local", (_st("X", ["Y"]),)), Block("dist", (_st("M", ["N"], d),)),
              Block("local", (_st("Z", ["Y"]),)),           # commutes with the dist block: fused
              Block("dist", (_st("P", ["X"], d),)),          # reads X: after the first local block
              Block("local", (_st("W", ["P"]),))]            # reads P: must stay after it
    fused = fuse_blocks(blocks)
    assert [b.mode for b in fused] == ["local", "dist", "local"]
    assert [i.stmt.target for i in fused[0].items] == ["X", "Z"]
    assert [i.stmt.target for i in fused[1].items] == ["M", "P"]
    assert [i.stmt.target for i in fused[2].items] == ["W"]


def test_block_fusion_reduces_blocks_of_real_programs():
    simple = dist_simplify(m3_to_dist(compile_sql(JOIN3, mode="batch").m3), OPTS)
    unfused = dist_blocks(simple, OPTS)
    fused = dist_fuse(unfused, OPTS)
    n = lambda p: sum(len(t.blocks) for t in p.triggers)
    assert n(fused) < n(unfused)


# ------------------------------------------- generated code on a simulated cluster

def test_generated_source_is_built_with_ast_and_round_trips():
    sp = compile_sql(JOIN3, mode="batch").stage("spark")
    tree = ast.parse(sp.source)
    assert ast.unparse(tree).strip() == sp.source.strip()
    assert "class Program(DistRuntime)" in sp.source and "__main__" in sp.source
    assert str(sp) == sp.source


class _Sim:
    """Stands in for DistRuntime: a Dist map is a list of P dicts (one per partition)."""

    def _sim_init(self, partitions):
        self.partitions = partitions
        self.local = {n: {} for n in self.LOCAL_MAPS}
        self.dist = {n: [{} for _ in range(partitions)] for n in self.DIST_MAPS}

    def begin_batch(self):
        pass

    def end_batch(self):
        pass

    def begin_trigger(self, delta_name, delta):
        self.local[delta_name] = delta

    def _end_undo(self):        # no undo journal on the simulated cluster (its maps are dicts)
        pass

    def end_trigger(self, temps):
        for t in temps:
            self.local.pop(t, None)
            self.dist.pop(t, None)
        for name, parts in self.DIST_MAPS.items():   # every entry sits in its own partition
            if parts == ():                          # replicated: every partition holds all of it
                assert all(d == self.dist[name][0] for d in self.dist[name]), name
                continue
            for i, d in enumerate(self.dist[name]):
                assert all(worker.key_partition(k, parts) % self.partitions == i for k in d), name

    def scatter(self, target, source, parts):
        self.dist[target] = worker.split_by_partition(self.local[source], parts, self.partitions)

    def broadcast(self, target, source, parts=()):
        self.dist[target] = [dict(self.local[source]) for _ in range(self.partitions)]

    def repart(self, target, source, parts):
        items = [kv for d in self.dist[source] for kv in d.items()]
        out = [[] for _ in range(self.partitions)]
        for k, v in items:
            out[worker.key_partition(k, parts) % self.partitions].append((k, v))
        self.dist[target] = [worker.merge_entries(x) for x in out]

    def gather(self, target, source):
        self.local[target] = worker.merge_entries(kv for d in self.dist[source] for kv in d.items())

    def run_dist(self, fn, params, writes):
        results = [fn(*(self.dist[p][i] for p in params)) for i in range(self.partitions)]
        for j, name in enumerate(writes):
            self.dist[name] = [r[j] for r in results]

    def read_map(self, name):
        if name in self.local:
            return dict(self.local[name])
        if self.DIST_MAPS.get(name) == ():
            return {k: v for k, v in self.dist[name][0].items() if v != 0}
        return worker.merge_entries(kv for d in self.dist[name] for kv in d.items())


def simulated_program(sql: str, partitions: int = 3, partitioning=None, replicate: bool = True):
    comp = compile_sql(sql, mode="batch")
    opts = Options(mode="batch")
    dist = m3_to_dist(comp.stage("m3", "distributed"), partitioning or {}, replicate=replicate)
    prog = dist_to_spark(dist_fuse(dist_blocks(dist_simplify(dist, opts), opts), opts), opts)
    mod = load_program_module(prog.source)
    cls = type("SimProgram", (_Sim, mod.Program), {})
    p = cls.__new__(cls)
    p._sim_init(partitions)
    return comp, p


def _check_stream(sql, partitions, partitioning, seed):
    comp, sim = simulated_program(sql, partitions, partitioning)
    _simulate_against_interp(comp, sim, seed)


@pytest.mark.parametrize("sql", [GROUP_SUM, JOIN3, SELF_JOIN, NESTED, GLOBAL_SUM])
@pytest.mark.parametrize("partitions", [1, 3])
def test_simulated_cluster_matches_interp(sql, partitions):
    _check_stream(sql, partitions, None, seed=partitions)


def test_simulated_cluster_with_every_map_local_and_with_other_partitionings():
    m3 = compile_sql(JOIN3, mode="batch").stage("m3", "distributed")
    _check_stream(JOIN3, 2, {m.name: "local" for m in m3.maps}, seed=5)
    _check_stream(JOIN3, 3, {m.name: [len(m.keys) - 1] for m in m3.maps if m.keys}, seed=6)


# ------------------------------------------------ global aggregates: a spread batch

def _blocks(prog, relation="R"):
    trig = next(t for t in prog.triggers if t.event.relation == relation)
    return [(b.mode, [type(i).__name__ if isinstance(i, DistStatement) else i.kind for i in b.items])
            for b in trig.blocks]


def test_global_aggregate_spreads_the_batch_partial_sums_one_gather():
    """No map is partitioned (Q6-like): the batch is Scattered on the columns it uses, summed per
    partition, and the partial sums Gathered into the driver's view (Hot Dog's Random placement)."""
    comp = compile_sql(GLOBAL_SUM, mode="batch")
    prog = comp.stage("dist")
    assert all(isinstance(m.tag, Local) for m in prog.maps if m.kind == "view")
    modes = [m for m, _ in _blocks(prog)]
    assert modes == ["local", "exchange", "dist", "exchange", "local"]
    assert [items for m, items in _blocks(prog) if m == "exchange"] == [["scatter"], ["gather"]]
    assert any(isinstance(m.tag, Random) for m in prog.maps if m.kind == "temp")   # the partial sums
    off = dist_simplify(m3_to_dist(comp.stage("m3", "distributed"), {}, random_batch=False), OPTS)
    assert [m for m, _ in _blocks(dist_blocks(off, OPTS))] == ["local"]


def test_batch_not_spread_when_a_map_is_partitioned_or_nothing_to_hash():
    count = """CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED csv;
SELECT COUNT(*) FROM R;"""
    assert [m for m, _ in _blocks(compile_sql(count, mode="batch").stage("dist"))] == ["local"]
    self_join = compile_sql(SELF_JOIN, mode="batch").stage("dist")      # its maps are partitioned
    assert any(isinstance(m.tag, Dist) for m in self_join.maps if m.kind == "view")


def test_explain_plans_one_job_per_batch_of_every_stream():
    """--explain's job counts are the runtime's own decisions, dry-run without Spark."""
    from toaster.backends.spark.engine import explain_jobs, load_program_module
    text = explain_jobs(compile_sql(JOIN3, mode="batch").stage("spark"))
    assert "a batch of every stream (R, S, T): 1 job(s)" in text
    # a global sum: the executors pre-aggregate their slice of the batch and, in the same task,
    # sum it for the Gather (a spread block: docs/spark-engine.md, "Batch input read by the executors")
    prog = compile_sql(GLOBAL_SUM, mode="batch").stage("spark")
    assert "1 job(s), 1 stage(s)" in explain_jobs(prog)
    assert load_program_module(prog.source).Program.SPREAD_BLOCKS      # what makes it one stage
    # blocks that join views depend on where their input lies: never spread
    for sql in (JOIN3, SELF_JOIN):
        assert not load_program_module(compile_sql(sql, mode="batch").stage("spark").source).Program.SPREAD_BLOCKS


# ------------------------------------------------ a view joined on another key: a copy

CHAIN = """CREATE STREAM C(CK int, SEG int) FROM FILE 'c.csv' LINE DELIMITED csv;
CREATE STREAM O(OK int, CK int, D int) FROM FILE 'o.csv' LINE DELIMITED csv;
CREATE STREAM L(OK int, P int) FROM FILE 'l.csv' LINE DELIMITED csv;
SELECT L.OK, O.D, SUM(L.P) FROM C, O, L WHERE C.CK = O.CK AND L.OK = O.OK AND C.SEG > 1 GROUP BY L.OK, O.D;"""


def _view_reparts(prog) -> list:
    views = {m.name for m in prog.maps if m.kind == "view"}
    return [x.source for t in prog.triggers for b in t.blocks if b.mode == "exchange"
            for x in b.items if x.kind == "repart" and x.source in views]


def test_view_joined_on_another_key_is_copied_not_reparted_whole():
    """Q3's shape: C's batch joins O's view on CK while L's joins it on OK. Without a copy every C
    batch Reparts the whole view (O(state) per batch); with it, the copy partitioned by CK is
    updated beside the view and C's batch reads it where it lies."""
    comp = compile_sql(CHAIN, mode="batch")
    opts = Options(mode="batch")
    prog = dist_fuse(dist_blocks(dist_simplify(m3_to_dist(comp.stage("m3", "distributed"), {}, replicate=False),
                                               opts), opts), opts)
    copies = [m for m in prog.maps if m.copy_of]
    assert copies and not _view_reparts(prog)
    for m in copies:
        source = next(s for s in prog.maps if s.name == m.copy_of)
        assert (m.keys, m.type, m.kind) == (source.keys, source.type, "view") and m.tag != source.tag
    assert parse_dist(print_dist(prog)) == prog and " COPY OF " in print_dist(prog)
    off = m3_to_dist(comp.stage("m3", "distributed"), {}, view_copies_on=False, replicate=False)
    assert not any(m.copy_of for m in off.maps)
    assert _view_reparts(dist_blocks(dist_simplify(off, OPTS), OPTS))      # what the copy saves
    assert "VIEW_COPIES = {" in dist_to_spark(prog, opts).source
    _, sim = simulated_program(CHAIN, 3, replicate=False)

    def copies_equal_their_views():
        for m in copies:
            assert sim.read_map(m.name) == sim.read_map(m.copy_of)
    _simulate_against_interp(comp, sim, 10, after_batch=copies_equal_their_views)


# ------------------------------------- a re-evaluation restricted to the batch's keys (Q17)

AVG_NESTED = """CREATE STREAM L(PK int, Q int, P int) FROM FILE 'l.csv' LINE DELIMITED csv;
CREATE STREAM PT(PK int, BR int) FROM FILE 'p.csv' LINE DELIMITED csv;
SELECT SUM(L.P) FROM L, PT WHERE PT.PK = L.PK AND PT.BR > 1
  AND L.Q < (SELECT 0.5 * AVG(L2.Q) FROM L L2 WHERE L2.PK = PT.PK);"""


def _view_gathers(prog) -> list:
    views = {m.name for m in prog.maps if m.kind == "view"}
    return [x.source for t in prog.triggers for b in t.blocks if b.mode == "exchange"
            for x in b.items if x.kind == "gather" and x.source in views]


def test_rescan_of_a_driver_scalar_is_restricted_to_the_batch_domain():
    """TPC-H Q17's shape: L's trigger re-evaluates the scalar over the views partitioned by PK.
    With the batch domain it subtracts the batch's groups before the updates and adds them
    after, on the workers (O(batch)); no view is gathered, the input block stays linear (no
    lift over the batch on the driver), and the maps equal the interpreter's after every batch."""
    comp = compile_sql(AVG_NESTED, mode="batch")
    prog = comp.stage("dist")
    assert not _view_gathers(prog)
    for t in prog.triggers:
        for b in t.blocks:
            if b.mode == "local":
                for x in b.items:
                    assert "^=" not in str(x) or "DELTA" not in str(x), x
    text = print_dist(prog)
    assert "__dom_" in text and parse_dist(text) == prog
    m3 = comp.stage("m3", "distributed")
    off = m3_to_dist(m3, {}, batch_domains=False)
    assert ":=" in print_dist(off).split("ON BATCH L {")[1].split("ON BATCH")[0]     # the rescan it replaces
    for partitions, seed in ((1, 3), (3, 4)):
        _check_stream(AVG_NESTED, partitions, None, seed)


def _simulate_against_interp(comp, sim, seed, after_batch=lambda: None):
    m3 = comp.stage("m3", "distributed")      # the program the distributed branch tags
    ref = InterpEngine(m3)
    for b in random_stream(m3.relations, seed=seed, n_batches=12, max_batch=10, deletes=True):
        ref.apply(b)
        delta = {}
        for s, row in b.rows():
            delta[row] = delta.get(row, 0) + s
        sim.apply_delta(b.relation, {k: v for k, v in delta.items() if v != 0})
        for m in m3.maps:
            assert sim.read_map(m.name) == ref.read_map(m.name), m.name
        after_batch()


@pytest.mark.parametrize("partitions", [1, 3])
def test_small_view_replicated_and_its_batch_broadcast_remove_every_repart(partitions):
    """Q3's shape again: C's view (the customers passing the filter) only adds C's batch, so it is
    kept whole on every partition and C's batch is Broadcast: C's batch then joins O's and the
    (C, O)-views where they lie (partitioned by OK), O's batch joins the replicated view where it
    is Scattered; no Repart and no view copy remain (placement.choose_replicated). The simulated
    cluster (every partition's replica checked equal) equals the interpreter, deletions included."""
    comp = compile_sql(CHAIN, mode="batch", pass_options={"m3_to_dist": {"broadcast": "C"}})
    prog = comp.stage("dist")
    replicated = [m.name for m in prog.maps if isinstance(m.tag, Replicated) and m.kind == "view"]
    assert len(replicated) == 1 and not any(m.copy_of for m in prog.maps)
    kinds = [x.kind for t in prog.triggers for b in t.blocks if b.mode == "exchange" for x in b.items]
    assert "broadcast" in kinds and "repart" not in kinds
    text = print_dist(prog)
    assert "@ Replicated;" in text and ":= Broadcast(" in text and parse_dist(text) == prog
    tagged = m3_to_dist(comp.stage("m3", "distributed"), {})
    assert "Broadcast(" in print_dist(tagged) and parse_dist(print_dist(tagged)) == tagged
    off = m3_to_dist(comp.stage("m3", "distributed"), {}, replicate=False)
    assert not any(isinstance(m.tag, Replicated) for m in off.maps)
    assert f"{replicated[0]!r}: ()" in comp.stage("spark").source      # DIST_MAPS: () = replicated
    _, sim = simulated_program(CHAIN, partitions)
    _simulate_against_interp(comp, sim, seed=20 + partitions)


def _replicated_views(comp) -> list:
    return [m.name for m in comp.stage("dist").maps if isinstance(m.tag, Replicated) and m.kind == "view"]


def test_replication_weighs_relation_sizes(tmp_path):
    """The choice of replicated views weighs sizes (replication.broadcastable): a relation's batch
    is broadcast only when it is known small, by a hint (m3_to_dist{broadcast=...}) or by its
    source file's share of the bytes of every triggered relation's source (default at most 5 %);
    a relation without a readable source is presumed large."""
    from toaster.dist.replication import broadcastable, source_sizes
    def write(sizes):
        for rel, n in sizes.items():
            (tmp_path / f"{rel.lower()}.csv").write_text("x" * n)

    def chain(**opts):
        return compile_sql(CHAIN, mode="batch", base_dir=str(tmp_path), pass_options={"m3_to_dist": opts} if opts else None)
    # no source file: every relation presumed large, nothing replicated (C's view is Reparted / copied)
    assert _replicated_views(chain()) == []
    assert broadcastable(chain().m3) == frozenset()
    # hints: exactly the named relations may be broadcast ('*': any)
    c_view = _replicated_views(chain(broadcast="C"))
    assert len(c_view) == 1 and _replicated_views(chain(broadcast="*")) == c_view
    assert not set(c_view) & set(_replicated_views(chain(broadcast="O,L")))   # C's view: C's batch
    # sizes from the source files: C at 1 % of the bytes is broadcast, at 40 % it is not
    write({"C": 100, "O": 3_000, "L": 6_900})
    m3 = chain().m3
    assert source_sizes(m3, str(tmp_path)) == {"C": 100, "O": 3_000, "L": 6_900}
    assert broadcastable(m3, (), 0.05, str(tmp_path)) == frozenset({"C"})
    assert _replicated_views(chain()) == c_view
    assert _replicated_views(chain(broadcast_share=0.005)) == []
    write({"C": 4_000, "O": 3_000, "L": 3_000})
    assert _replicated_views(chain()) == []
    assert _replicated_views(chain(broadcast="C")) == c_view     # a hint overrides the sizes
    (tmp_path / "o.csv").unlink()                                    # O unknown: presumed large
    write({"C": 10, "L": 3_000})
    assert broadcastable(chain().m3, (), 0.05, str(tmp_path)) == frozenset({"C"})
