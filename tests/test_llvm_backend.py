"""LLVM backend: hand-built imperative programs run natively and checked against a reference.

The reference is the imperative interpreter (toaster.imperative.interpreter.ImpEngine) when it
exists, else the small direct evaluator of the imperative IR below (RefEngine; also used for the
large growth test, where the interpreter's full-scan ForEach is quadratic, and itself checked
against ImpEngine); for the example query also a brute-force evaluation of the SQL, and end to
end the lead's InterpEngine on the M3 program.
"""
from __future__ import annotations

import math
from collections import ChainMap
import random

import numpy as np
import pytest

from toaster.m3.ir import Event
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapClear, MapSpec, ImpTrigger, ImpProgram)
from toaster.runtime.batch import Batch
from toaster.schema import RelationDecl, Column, QueryResult, ResultColumn
from toaster.types import INT, FLOAT, DATE, STRING, BOOL
from toaster.backends.llvm import LLVMEngine, generate_llvm
from toaster.passes import get_pass


# ------------------------------------------------------------------ reference evaluator

class RefEngine:
    """Direct evaluation of the imperative IR in Python (the oracle for these tests)."""

    def __init__(self, prog: ImpProgram):
        self.prog = prog
        self.maps = {m.name: {} for m in prog.maps}
        self.rels = {r.name: r for r in prog.relations}
        self.slices = {}   # (map, bound positions) -> {partial key: [keys]}: keeps slices fast

    def _slice(self, name, positions, partial):
        ix = self.slices.get((name, positions))
        if ix is None:
            ix = self.slices[(name, positions)] = {}
            for k in self.maps[name]:
                ix.setdefault(tuple(k[j] for j in positions), []).append(k)
        return ix.get(partial, ())

    def _new_key(self, name, k):
        for (m, positions), ix in self.slices.items():
            if m == name:
                ix.setdefault(tuple(k[j] for j in positions), []).append(k)

    def _clear(self, name):
        self.maps[name].clear()
        for key in [key for key in self.slices if key[0] == name]:
            del self.slices[key]

    def apply(self, batch: Batch):
        rel = batch.relation
        trig = {t.event.kind: t for t in self.prog.triggers if t.event.relation == rel}
        rows = list(batch.rows())
        if "batch" in trig:
            delta = self.maps.get(f"DELTA_{rel}")
            if delta is not None:
                self._clear(f"DELTA_{rel}")
                for s, r in rows:
                    if r not in delta:
                        self._new_key(f"DELTA_{rel}", r)
                    delta[r] = delta.get(r, 0) + s
            self.block(trig["batch"].body, {})
            if delta is not None:
                self._clear(f"DELTA_{rel}")
            return
        for s, r in rows:
            t = trig.get("insert" if s > 0 else "delete")
            if t is not None:
                self.block(t.body, {p.name: v for p, v in zip(t.params, r)})

    def read_map(self, name):
        return {k: v for k, v in self.maps[name].items() if v != 0}

    def block(self, stmts, env):
        env = ChainMap(env).new_child() if isinstance(env, dict) else env.new_child()
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s, env):
        match s:
            case Declare(var, init):
                env[var.name] = self.conv(self.ev(init, env), var.type)
            case Assign(var, value):
                scope = next(m for m in env.maps if var.name in m)   # the declaring block's scope
                scope[var.name] = self.conv(self.ev(value, env), var.type)
            case If(cond, then, orelse):
                self.block(then if self.ev(cond, env) else orelse, env)
            case MapAdd(name, keys, value):
                spec = self.prog.map(name)
                k = self.key(spec, keys, env)
                m = self.maps[name]
                if k not in m:
                    self._new_key(name, k)
                m[k] = m.get(k, 0) + self.conv(self.ev(value, env), spec.value_type)
            case MapClear(name):
                self._clear(name)
            case ForEach(name, pattern, key_vars, value_var, body):
                spec = self.prog.map(name)
                bound = {j: self.conv(self.ev(p, env), spec.key_types[j]) for j, p in enumerate(pattern)
                         if p is not None}
                m = self.maps[name]
                positions = tuple(sorted(bound))
                keys = self._slice(name, positions, tuple(bound[j] for j in positions)) if bound else m
                for k in list(keys):
                    v = m[k]
                    if v == 0:
                        continue
                    inner = env.new_child()
                    inner[value_var.name] = self.conv(v, value_var.type)
                    for j, kv in enumerate(key_vars):
                        if kv is not None:
                            inner[kv.name] = k[j]
                    self.block(body, inner)
            case _:
                raise AssertionError(s)

    def key(self, spec, keys, env):
        return tuple(self.conv(self.ev(k, env), t) for k, t in zip(keys, spec.key_types))

    @staticmethod
    def conv(v, t):
        if t == FLOAT:
            v = float(v)
            return 0.0 if v == 0 else v
        if t in (INT, DATE):
            return int(v)
        if t == BOOL:
            return bool(v)
        return v

    def ev(self, e, env):
        match e:
            case LocalRef(name, t):
                return env[name]
            case Lit(v, t):
                return v
            case BinOp(op, l, r, t):
                x, y = self.ev(l, env), self.ev(r, env)
                ops = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                       "/": lambda: x / y, "=": lambda: x == y, "!=": lambda: x != y,
                       "<": lambda: x < y, "<=": lambda: x <= y, ">": lambda: x > y,
                       ">=": lambda: x >= y, "and": lambda: x and y, "or": lambda: x or y}
                return self.conv(ops[op](), t)
            case Not(a):
                return not self.ev(a, env)
            case Cast(t, a):
                return self.conv(self.ev(a, env), t)
            case MapGet(name, keys, t):
                spec = self.prog.map(name)
                return self.conv(self.maps[name].get(self.key(spec, keys, env), 0), t)
        raise AssertionError(e)


def make_oracle(prog):
    try:
        from toaster.imperative.interpreter import ImpEngine
    except ImportError:
        return RefEngine(prog)
    return ImpEngine(prog)


def assert_maps_equal(native, oracle, prog, skip_kinds=("delta",)):
    for spec in prog.maps:
        if spec.kind in skip_kinds:
            continue
        got, want = native.read_map(spec.name), oracle.read_map(spec.name)
        want = {k: v for k, v in want.items() if v != 0}
        assert set(got) == set(want), (spec.name, sorted(set(got) ^ set(want))[:10])
        for k in want:
            if spec.value_type == FLOAT:
                assert math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-9), (spec.name, k)
            else:
                assert got[k] == want[k] and isinstance(got[k], int), (spec.name, k, got[k], want[k])


# ------------------------------------------------------------------ the example query of the brief
# SELECT SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C

def v(name, t=INT):
    return LocalRef(name, t)


def mul(*xs, t=INT):
    out = xs[0]
    for x in xs[1:]:
        out = BinOp("*", out, x, t)
    return out


def lit(x, t=INT):
    return Lit(x, t)


R = RelationDecl("R", (Column("A", INT), Column("B", INT)), "stream")
S = RelationDecl("S", (Column("B", INT), Column("C", INT)), "stream")
T = RelationDecl("T", (Column("C", INT), Column("D", INT)), "stream")
QUERY = QueryResult("QUERY_1", (), (ResultColumn("SUM", INT),), ("QUERY_1_SUM",))
EXAMPLE_MAPS = (
    MapSpec("QUERY_1_SUM", (), INT),
    MapSpec("M1", (INT,), INT),
    MapSpec("M2", (INT, INT), INT, indexes=((0,), (1,))),
    MapSpec("M3", (INT,), INT),
    MapSpec("M4", (INT,), INT),
    MapSpec("M5", (INT,), INT),
)


def example_tuple_program() -> ImpProgram:
    a, b, c, d, C, B, w = v("a"), v("b"), v("c"), v("d"), v("C"), v("B"), v("w")
    triggers = []
    for kind, sign in (("insert", 1), ("delete", -1)):
        sg = lit(sign)
        triggers += [
            ImpTrigger(f"{kind}_R", Event(kind, "R", ()), (a, b), (
                MapAdd("QUERY_1_SUM", (), mul(sg, a, MapGet("M1", (b,), INT))),
                ForEach("M2", (b, None), (None, C), w, (MapAdd("M5", (C,), mul(sg, a, w)),)),
                MapAdd("M4", (b,), mul(sg, a)),
            )),
            ImpTrigger(f"{kind}_S", Event(kind, "S", ()), (b, c), (
                MapAdd("QUERY_1_SUM", (), mul(sg, MapGet("M4", (b,), INT), MapGet("M3", (c,), INT))),
                MapAdd("M1", (b,), mul(sg, MapGet("M3", (c,), INT))),
                MapAdd("M2", (b, c), sg),
                MapAdd("M5", (c,), mul(sg, MapGet("M4", (b,), INT))),
            )),
            ImpTrigger(f"{kind}_T", Event(kind, "T", ()), (c, d), (
                MapAdd("QUERY_1_SUM", (), mul(sg, MapGet("M5", (c,), INT), d)),
                ForEach("M2", (None, c), (B, None), w, (MapAdd("M1", (B,), mul(sg, w, d)),)),
                MapAdd("M3", (c,), mul(sg, d)),
            )),
        ]
    return ImpProgram((R, S, T), EXAMPLE_MAPS, tuple(triggers), (QUERY,), "tuple")


def example_batch_program() -> ImpProgram:
    a, b, c, d, C, B, w, m = v("a"), v("b"), v("c"), v("d"), v("C"), v("B"), v("w"), v("m")
    deltas = tuple(MapSpec(f"DELTA_{r}", (INT, INT), INT, kind="delta") for r in "RST")

    def over(rel, x, y, body):
        return ForEach(f"DELTA_{rel}", (None, None), (x, y), m, body)

    triggers = (
        ImpTrigger("batch_R", Event("batch", "R", ()), (), (
            over("R", a, b, (MapAdd("QUERY_1_SUM", (), mul(m, a, MapGet("M1", (b,), INT))),)),
            over("R", a, b, (ForEach("M2", (b, None), (None, C), w, (MapAdd("M5", (C,), mul(m, a, w)),)),)),
            over("R", a, b, (MapAdd("M4", (b,), mul(m, a)),)),
        )),
        ImpTrigger("batch_S", Event("batch", "S", ()), (), (
            over("S", b, c, (MapAdd("QUERY_1_SUM", (), mul(m, MapGet("M4", (b,), INT), MapGet("M3", (c,), INT))),)),
            over("S", b, c, (MapAdd("M1", (b,), mul(m, MapGet("M3", (c,), INT))),)),
            over("S", b, c, (MapAdd("M2", (b, c), m),)),
            over("S", b, c, (MapAdd("M5", (c,), mul(m, MapGet("M4", (b,), INT))),)),
        )),
        ImpTrigger("batch_T", Event("batch", "T", ()), (), (
            over("T", c, d, (MapAdd("QUERY_1_SUM", (), mul(m, MapGet("M5", (c,), INT), d)),)),
            over("T", c, d, (ForEach("M2", (None, c), (B, None), w, (MapAdd("M1", (B,), mul(m, w, d)),)),)),
            over("T", c, d, (MapAdd("M3", (c,), mul(m, d)),)),
        )),
    )
    return ImpProgram((R, S, T), EXAMPLE_MAPS + deltas, triggers, (QUERY,), "batch")


def brute_force_sum(db):
    total = 0
    for (ra, rb), nr in db["R"].items():
        for (sb, sc), ns in db["S"].items():
            if sb != rb:
                continue
            for (tc, td), nt in db["T"].items():
                if tc == sc:
                    total += ra * td * nr * ns * nt
    return total


def random_example_stream(rng, nbatches, max_batch):
    """Batches of inserts and deletes (only of tuples present) over small domains."""
    db = {"R": {}, "S": {}, "T": {}}
    for _ in range(nbatches):
        rel = rng.choice("RST")
        rows, signs = [], []
        for _ in range(rng.randint(1, max_batch)):
            present = [k for k, n in db[rel].items() if n > 0]
            if present and rng.random() < 0.3:
                row, s = rng.choice(present), -1
            else:
                row, s = (rng.randint(-3, 5), rng.randint(0, 4)), 1
            db[rel][row] = db[rel].get(row, 0) + s
            rows.append(row)
            signs.append(s)
        yield Batch.from_rows(rel, (INT, INT), rows, signs), db


@pytest.mark.parametrize("make_program", [example_tuple_program, example_batch_program])
def test_example_query_random_stream(make_program):
    prog = make_program()
    native, oracle = LLVMEngine(prog), make_oracle(prog)
    rng = random.Random(7)
    for batch, db in random_example_stream(rng, 60, 12):
        native.apply(batch)
        oracle.apply(batch)
        assert_maps_equal(native, oracle, prog)
        assert native.read_map("QUERY_1_SUM").get((), 0) == brute_force_sum(db)
    (res,) = native.results()
    assert res.rows == ((brute_force_sum(db),),) or (res.rows == () and brute_force_sum(db) == 0)
    native.close()


def test_single_tuple_helpers_and_entry_points():
    prog = example_tuple_program()
    native, oracle = LLVMEngine(prog), make_oracle(prog)
    for rel, row in (("R", (1, 2)), ("S", (2, 3)), ("T", (3, 4)), ("R", (5, 2))):
        native.insert(rel, row)
        oracle.apply(Batch.from_rows(rel, (INT, INT), [row]))
    native.delete("R", (1, 2))
    oracle.apply(Batch.from_rows("R", (INT, INT), [(1, 2)], [-1]))
    assert_maps_equal(native, oracle, prog)
    assert set(native.llvm_module.entry_points) == {"R", "S", "T"}


# ------------------------------------------------------------------ scalar types, If, locals, casts

P = RelationDecl("P", (Column("NAME", STRING), Column("D", DATE), Column("X", FLOAT), Column("K", INT)), "stream")


def typed_program() -> ImpProgram:
    n, d, x, k = v("n", STRING), v("d", DATE), v("x", FLOAT), v("k")
    wv, fl, dd, fv, kk, tv = v("w", FLOAT), v("flag", BOOL), v("dd", DATE), v("fv", FLOAT), v("kk"), v("tv")
    maps = (
        MapSpec("F1", (STRING, DATE), FLOAT, indexes=((0,),)),
        MapSpec("F2", (FLOAT,), INT),
        MapSpec("F3", (), FLOAT),
        MapSpec("F4", (STRING,), INT),
        MapSpec("F5", (BOOL, DATE), INT),
        MapSpec("TMP", (INT,), INT, kind="temp"),
    )
    body = (
        Declare(wv, BinOp("/", x, Cast(FLOAT, BinOp("+", k, lit(1), INT)), FLOAT)),
        Declare(fl, BinOp(">", x, lit(0.0, FLOAT), BOOL)),
        If(BinOp("and", BinOp(">=", d, lit(19950101, DATE), BOOL), BinOp("!=", n, lit("bob", STRING), BOOL), BOOL),
           (MapAdd("F1", (n, d), BinOp("*", x, lit(2.5, FLOAT), FLOAT)),),
           (Assign(wv, BinOp("+", wv, lit(1.0, FLOAT), FLOAT)),)),
        MapAdd("F2", (x,), lit(1)),
        MapAdd("F3", (), wv),
        If(BinOp("=", n, lit("carol", STRING), BOOL), (MapAdd("F4", (lit("carol!", STRING),), lit(7)),)),
        If(Not(fl), (MapAdd("F4", (n,), lit(1)),)),
        MapAdd("F5", (fl, d), Cast(INT, fl)),
        MapAdd("F5", (Not(fl), d), Cast(INT, BinOp("*", x, lit(3.0, FLOAT), FLOAT))),
        MapClear("TMP"),
        MapAdd("TMP", (k,), lit(1)),
        MapAdd("TMP", (BinOp("+", k, lit(1), INT),), lit(2)),
        ForEach("TMP", (None,), (kk,), tv, (MapAdd("F4", (n,), BinOp("*", kk, tv, INT)),)),
        # slice on a string key; DATE comparison on the loop variable
        ForEach("F1", (n, None), (None, dd), fv,
                (If(BinOp("<", dd, d, BOOL), (MapAdd("F3", (), fv),)),)),
    )
    dbody = (MapAdd("F2", (x,), lit(-1)), MapAdd("F4", (n,), BinOp("-", lit(0), k, INT)))
    triggers = (ImpTrigger("ins_P", Event("insert", "P", ()), (n, d, x, k), body),
                ImpTrigger("del_P", Event("delete", "P", ()), (n, d, x, k), dbody))
    return ImpProgram((P,), maps, triggers, (), "tuple")


def random_typed_batch(rng, size):
    names = ["alice", "bob", "carol", "dave", "ünï", ""]
    dates = [19940101, 19950101, 19951231, 20000229]
    xs = [0.0, -0.0, 1.5, -2.25, 3.0, 1e-3]
    rows = [(rng.choice(names), rng.choice(dates), rng.choice(xs), rng.randint(0, 6)) for _ in range(size)]
    signs = [1 if rng.random() < 0.8 else -1 for _ in rows]
    return Batch.from_rows("P", P.types, rows, signs)


def test_typed_program_strings_dates_floats_bools():
    prog = typed_program()
    native, oracle = LLVMEngine(prog), make_oracle(prog)
    rng = random.Random(3)
    for _ in range(25):
        batch = random_typed_batch(rng, rng.randint(1, 20))
        native.apply(batch)
        oracle.apply(batch)
        assert_maps_equal(native, oracle, prog)
    f2 = native.read_map("F2")
    assert all(isinstance(k[0], float) for k in f2)
    assert not any(math.copysign(1.0, k[0]) < 0 and k[0] == 0 for k in f2)   # -0.0 stored as 0.0
    assert all(isinstance(k[0], str) for k in native.read_map("F4"))
    assert all(isinstance(k[0], bool) and isinstance(k[1], int) for k in native.read_map("F5"))
    assert "carol!" in native.llvm_module.strings


# ------------------------------------------------------------------ growth, indexes, slices

G = RelationDecl("G", (Column("A", INT), Column("B", INT), Column("C", INT)), "stream")


def growth_program(with_indexes=True) -> ImpProgram:
    a, b, c, b2, a2, c2, x = v("a"), v("b"), v("c"), v("b2"), v("a2"), v("c2"), v("x")
    maps = (
        MapSpec("N", (INT, INT, INT), INT, indexes=((0, 2), (1,)) if with_indexes else ()),
        MapSpec("BIG", (INT,), INT),
        MapSpec("SL", (INT,), INT),
        MapSpec("SL2", (INT, INT), FLOAT),
        MapSpec("W", (INT, INT), INT, indexes=((0,),) if with_indexes else ()),
    )
    body = (
        # read slices before the write, as M3 statement order guarantees
        ForEach("N", (a, None, c), (None, b2, None), x, (MapAdd("SL", (b2,), x),)),
        ForEach("N", (None, b, None), (a2, None, c2), x,
                (If(BinOp("<", a2, lit(40), BOOL), (MapAdd("SL2", (a2, c2), Cast(FLOAT, x)),)),)),
        ForEach("W", (BinOp("-", a, lit(1), INT), None), (None, b2), x, (MapAdd("SL", (b2,), x),)),
        MapAdd("N", (a, b, c), lit(1)),
        MapAdd("BIG", (a,), b),
        MapAdd("W", (a, b), c),
    )
    trig = ImpTrigger("ins_G", Event("insert", "G", ()), (a, b, c), body)
    return ImpProgram((G,), maps, (trig,), (), "tuple")


def growth_batches(seed, nbatches, n):
    rng = np.random.default_rng(seed)
    for _ in range(nbatches):
        yield Batch("G", np.ones(n, dtype=np.int8),
                    (rng.integers(0, 3000, n), rng.integers(0, 300, n), rng.integers(0, 3, n)))


@pytest.mark.parametrize("with_indexes", [True, False])
def test_growth_and_slices(with_indexes):
    # RefEngine here: the interpreter's ForEach scans the whole map, quadratic at this size
    # (test_reference_evaluator_agrees_with_interpreter checks RefEngine against it)
    prog = growth_program(with_indexes)
    native, oracle = LLVMEngine(prog), RefEngine(prog)
    for batch in growth_batches(11, 3, 2500):
        native.apply(batch)
        oracle.apply(batch)
    assert len(native.read_map("BIG")) > 2000     # far past the initial capacity of 16
    assert len(native.read_map("N")) > 5000
    assert_maps_equal(native, oracle, prog)


def test_reference_evaluator_agrees_with_interpreter():
    pytest.importorskip("toaster.imperative.interpreter")
    from toaster.imperative.interpreter import ImpEngine
    for prog, batches in ((growth_program(), list(growth_batches(5, 2, 300))),
                          (typed_program(), [random_typed_batch(random.Random(9), 15) for _ in range(10)])):
        ref, imp = RefEngine(prog), ImpEngine(prog)
        for b in batches:
            ref.apply(b)
            imp.apply(b)
        assert_maps_equal(ref, imp, prog, skip_kinds=("delta", "temp"))


def test_batch_mode_delta_cancels_within_batch():
    prog = example_batch_program()
    native, oracle = LLVMEngine(prog), make_oracle(prog)
    for rel in "ST":
        b = Batch.from_rows(rel, (INT, INT), [(1, 1), (2, 1)])
        native.apply(b)
        oracle.apply(b)
    # an insert and a delete of the same tuple in one batch net to zero
    b = Batch.from_rows("R", (INT, INT), [(5, 1), (5, 1), (7, 2)], [1, -1, 1])
    native.apply(b)
    oracle.apply(b)
    assert_maps_equal(native, oracle, prog)
    assert native.read_map("DELTA_R") == {}        # cleared after the batch trigger


def test_bool_column_and_independent_engines():
    rel = RelationDecl("BB", (Column("F", BOOL), Column("K", INT)), "stream")
    f, k, kk, x = v("f", BOOL), v("k"), v("kk", BOOL), v("x")
    maps = (MapSpec("CNT", (BOOL,), INT), MapSpec("TOT", (), FLOAT))
    body = (MapAdd("CNT", (f,), lit(1)),
            If(BinOp("or", f, BinOp(">", k, lit(3), BOOL), BOOL), (MapAdd("TOT", (), Cast(FLOAT, k)),)),
            ForEach("CNT", (None,), (kk,), x, (If(kk, (MapAdd("TOT", (), BinOp("/", x, lit(4), FLOAT)),)),)))
    prog = ImpProgram((rel,), maps, (ImpTrigger("t", Event("insert", "BB", ()), (f, k), body),), ())
    one, two, oracle = LLVMEngine(prog), LLVMEngine(prog), make_oracle(prog)
    rng = random.Random(1)
    for _ in range(10):
        b = Batch.from_rows("BB", rel.types, [(rng.random() < 0.5, rng.randint(0, 6)) for _ in range(7)])
        one.apply(b)
        oracle.apply(b)
    assert_maps_equal(one, oracle, prog)
    two.insert("BB", (True, 5))            # a second engine of the same program has its own maps
    assert two.read_map("CNT") == {(True,): 1} and one.read_map("CNT") != two.read_map("CNT")
    one.close()
    two.insert("BB", (False, 1))
    assert two.read_map("CNT") == {(True,): 1, (False,): 1}


# ------------------------------------------------------------------ errors and the pass

def _one_trigger(body, rel=P, params=None, maps=(MapSpec("OUT", (), INT),)):
    params = params or (v("n", STRING), v("d", DATE), v("x", FLOAT), v("k"))
    return ImpProgram((rel,), maps, (ImpTrigger("t", Event("insert", rel.name, ()), params, body),), ())


def test_string_function_of_a_non_literal_pattern_is_unsupported():
    n = v("n", STRING)
    for call in (Call("like", (n, n), INT), Call("substring", (n, v("k"), lit(1)), STRING),
                 Call("regexp_match", (n, v("n2", STRING)), INT)):
        prog = _one_trigger((If(BinOp("=", call, call, BOOL), (MapAdd("OUT", (), lit(1)),)),))
        with pytest.raises(UnsupportedError, match=rf"function {call.name}\(\) in the LLVM backend"):
            generate_llvm(prog)


def test_unknown_function_is_unsupported():
    prog = _one_trigger((MapAdd("OUT", (), Call("frobnicate", (v("k"),), INT)),))
    with pytest.raises(UnsupportedError, match="frobnicate"):
        LLVMEngine(prog)


def test_pass_registered_and_ir_text_verifies():
    import llvmlite.binding as llvm
    from toaster.backends.llvm.engine import _init_llvm
    out = get_pass("imp_to_llvm")(example_tuple_program())
    assert get_pass("imp_to_llvm").takes == "imp" and get_pass("imp_to_llvm").gives == "llvm"
    text = str(out)
    assert "define void @\"process_R\"" in text
    _init_llvm()
    llvm.parse_assembly(text).verify()


# ------------------------------------------------------------------ end to end (SQL -> ... -> LLVM)

E2E_QUERIES = {
    "rst_sum": """
        CREATE STREAM R(A int, B int); CREATE STREAM S(B int, C int); CREATE STREAM T(C int, D int);
        SELECT SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C;""",
    "group_join": """
        CREATE STREAM R(A int, B int); CREATE STREAM S(B int, C int);
        SELECT S.C, SUM(R.A), COUNT(*) FROM R, S WHERE R.B = S.B GROUP BY S.C;""",
    "strings_dates_floats": """
        CREATE STREAM P(NAME string, D date, X float, K int);
        SELECT P.NAME, SUM(P.X * P.K) AS s FROM P WHERE P.D >= DATE('1995-01-01') GROUP BY P.NAME;
        SELECT P.K, COUNT(*) AS n FROM P WHERE P.NAME = 'a' GROUP BY P.K;""",
}


@pytest.mark.parametrize("mode", ["tuple", "batch"])
@pytest.mark.parametrize("name", sorted(E2E_QUERIES))
def test_end_to_end_against_interp_engine(name, mode):
    pipeline = pytest.importorskip("toaster.pipeline")
    from toaster.testing import random_stream
    comp = pipeline.compile_sql(E2E_QUERIES[name], mode=mode)
    assert isinstance(comp.engine("llvm"), LLVMEngine)
    nonempty = 0
    for seed in range(3):
        native, interp = comp.engine("llvm"), comp.engine("interp")
        for batch in random_stream(list(native.relations.values()), seed=seed, deletes=True,
                                   n_batches=25, max_batch=8):
            native.apply(batch)
            interp.apply(batch)
            for m in comp.m3.maps:
                got, want = native.read_map(m.name), interp.read_map(m.name)
                assert set(got) == set(want), (m.name, sorted(set(got) ^ set(want))[:5])
                for k, w in want.items():
                    assert math.isclose(got[k], w, rel_tol=1e-9, abs_tol=1e-9), (m.name, k, got[k], w)
            for got_t, want_t in zip(native.results(), interp.results()):
                assert len(got_t.rows) == len(want_t.rows)
                for gr, wr in zip(got_t.rows, want_t.rows):
                    assert all(g == w if not isinstance(w, float) else math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-9)
                               for g, w in zip(gr, wr)), (gr, wr)
            nonempty += any(r.rows for r in interp.results())
        native.close()
    assert nonempty > 0, "vacuous: the streams never produced a result row"


@pytest.mark.parametrize("opt_level", [0, 1, 3])
@pytest.mark.parametrize("query", ["q03", "q06", "q17"])
def test_every_opt_level_gives_duckdbs_answers(opt_level, query):
    """--opt-level changes how much LLVM optimizes, never what the code computes."""
    from toaster.testing import random_stream, run_differential
    import pathlib
    sql = (pathlib.Path(__file__).parent / "queries" / "tpch" / f"{query}.sql").read_text()
    report = run_differential(sql, "llvm", lambda rels: random_stream(rels, seed=5, deletes=True, n_batches=8),
                              mode="batch", engine_options={"opt_level": opt_level})
    assert report.checks > 0


def test_unknown_opt_level_is_refused():
    from toaster.backends.llvm.engine import compile_module
    with pytest.raises(ValueError, match="opt_level"):
        compile_module("", opt_level=5)
