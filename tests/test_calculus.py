"""Calculus IR: printer/parser round trips, the delta law, and simplification soundness.

Expected values come from the calculus evaluator (the formal semantics) applied to the
original expression; nothing is typed in by hand.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from toaster.calculus.delta import delta
from toaster.calculus.evaluator import Database, evaluate
from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Lift, MapRef, Prod, Rel, Sum,
                                 Value, Var, schema)
from toaster.m3.ir import Event
from toaster.calculus.parser import parse_expr
from toaster.m3.parser import parse_m3
from toaster.calculus.printer import print_expr
from toaster.m3.printer import print_m3
from toaster.calculus.simplify import simplify_expr
from toaster.pipeline import compile_sql
from toaster.types import DATE, FLOAT, INT, STRING

REL_TYPES = {"R": (INT, INT), "S": (INT, FLOAT), "T": (INT, STRING)}
POOL = {"A": INT, "B": INT, "C": INT, "X": FLOAT, "Y": FLOAT, "N": STRING}
INT_VARS = [Var(n, t) for n, t in POOL.items() if t == INT]
FLOAT_VARS = [Var(n, t) for n, t in POOL.items() if t == FLOAT]


def _int_term(depth=2):
    leaf = st.one_of(st.sampled_from(INT_VARS), st.integers(-5, 5).map(lambda v: Const(v, INT)))
    if depth == 0:
        return leaf
    sub = _int_term(depth - 1)
    return st.one_of(leaf,
                     st.tuples(st.sampled_from(["+", "*"]), st.lists(sub, min_size=2, max_size=3))
                     .map(lambda p: Arith(p[0], tuple(p[1]), INT)),
                     st.tuples(sub, sub).map(lambda p: Arith("-", p, INT)),
                     sub.map(lambda a: Arith("neg", (a,), INT)))


def _float_term():
    return st.one_of(st.sampled_from(FLOAT_VARS),
                     st.floats(-4, 4, allow_nan=False).map(lambda v: Const(v, FLOAT)),
                     st.tuples(_int_term(1), st.sampled_from(FLOAT_VARS)).map(
                         lambda p: Arith("/", p, FLOAT)),
                     st.tuples(_int_term(1), st.sampled_from(FLOAT_VARS)).map(
                         lambda p: Arith("+", p, FLOAT)))


def _atom():
    return st.one_of(
        st.tuples(st.sampled_from(INT_VARS), st.sampled_from(INT_VARS)).map(lambda vs: Rel("R", vs)),
        st.tuples(st.sampled_from(INT_VARS), st.sampled_from(FLOAT_VARS)).map(lambda vs: Rel("S", vs)),
        st.tuples(st.sampled_from(INT_VARS), st.sampled_from(FLOAT_VARS)).map(lambda vs: DeltaRel("S", vs)),
        st.tuples(st.sampled_from(INT_VARS), st.just(Var("N", STRING))).map(lambda vs: Rel("T", vs)),
    )


def _calc(depth=2):
    leaf = st.one_of(
        _atom(),
        _int_term().map(Value),
        _float_term().map(Value),
        st.tuples(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _int_term(1), _int_term(1))
        .map(lambda p: Cmp(*p)),
        st.just(Cmp("=", Var("N", STRING), Const("x y", STRING))),
        st.just(Cmp("<", Var("A", INT), Const(19950101, DATE))) .map(lambda c: c),
    )
    if depth == 0:
        return leaf
    sub = _calc(depth - 1)
    return st.one_of(
        leaf,
        st.lists(sub, min_size=2, max_size=3).map(lambda ts: Sum(tuple(ts))),
        st.lists(sub, min_size=2, max_size=3).map(lambda fs: Prod(tuple(fs))),
        st.tuples(st.lists(st.sampled_from(INT_VARS), max_size=2, unique=True), sub)
        .map(lambda p: AggSum(tuple(p[0]), p[1])),
        st.tuples(st.sampled_from(INT_VARS), _int_term(1)).map(lambda p: Lift(p[0], Value(p[1]))),
    )


@settings(max_examples=200, deadline=None)
@given(_calc())
def test_print_parse_round_trip(e):
    text = print_expr(e)
    back = parse_expr(text, REL_TYPES, var_types=POOL)
    assert back == e, text


def test_m3_round_trip_of_compiled_programs():
    sql = """
    CREATE STREAM R(A int, B int);
    CREATE STREAM S(B int, C float);
    CREATE TABLE T(C int, D date);
    SELECT R.A, SUM(R.A * S.C / 2) AS total, COUNT(*) AS n FROM R, S, T
    WHERE R.B = S.B AND R.A = T.C AND T.D < DATE('1995-01-01') AND S.C >= -1.5
    GROUP BY R.A;
    SELECT COUNT(*) FROM R r1, R r2 WHERE r1.B = r2.A;
    """
    for mode in ("tuple", "batch"):
        m3 = compile_sql(sql, mode=mode).m3
        text = print_m3(m3)
        assert parse_m3(text) == m3
        assert print_m3(parse_m3(text)) == text


# ------------------------------------------------------------------ semantics

small = st.integers(0, 3)
R_rows = st.dictionaries(st.tuples(small, small), st.integers(1, 2), max_size=6)
S_rows = st.dictionaries(st.tuples(small, st.sampled_from([0.5, 1.0, 2.0])), st.integers(1, 2), max_size=6)

A, B, C = (Var(n, INT) for n in "ABC")
X = Var("X", FLOAT)
QUERIES = [
    AggSum((), Prod((Rel("R", (A, B)), Rel("S", (B, X)), Value(X)))),
    AggSum((A,), Prod((Rel("R", (A, B)), Rel("R", (B, C)), Value(Arith("+", (A, C), INT))))),
    AggSum((B,), Prod((Rel("R", (A, B)), Cmp("<", A, B), Rel("S", (A, X))))),
    AggSum((), Prod((Rel("R", (A, B)), Rel("R", (C, B)), Cmp("=", A, C)))),
    AggSum((A,), Sum((Prod((Rel("R", (A, B)), Value(B))), Prod((Rel("S", (A, X)), Value(X)))))),
]


def _apply(db: dict, rel: str, row, sign: int) -> dict:
    new = {k: dict(v) for k, v in db.items()}
    t = new.setdefault(rel, {})
    t[row] = t.get(row, 0) + sign
    if t[row] == 0:
        del t[row]
    return new


def _minus(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return {k: v for k, v in out.items() if abs(v) > 1e-9}


def _close(a: dict, b: dict) -> bool:
    return not _minus(a, b)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(QUERIES), R_rows, S_rows, st.sampled_from(["R", "S"]),
       st.tuples(small, small), st.sampled_from([1, -1]))
def test_single_tuple_delta_law(q, r, s, rel, row, sign):
    """Q(D + u) - Q(D) == ΔuQ(D) for single-tuple updates u = ±R(t)."""
    if rel == "S":
        row = (row[0], [0.5, 1.0, 2.0][row[1] % 3])
    types = (INT, INT) if rel == "R" else (INT, FLOAT)
    args = tuple(Var(f"u{i}", t) for i, t in enumerate(types))
    ev = Event("insert" if sign > 0 else "delete", rel, args)
    db = {"R": r, "S": s}
    outs = tuple(q.group)
    before = evaluate(q, Database(relations=db), {}, outs)
    after = evaluate(q, Database(relations=_apply(db, rel, row, sign)), {}, outs)
    d = delta(q, ev)
    got = evaluate(d, Database(relations=db), dict(zip(args, row)), outs)
    assert _close(_minus(after, before), got)
    # simplification preserves the delta's meaning
    simp = simplify_expr(d, bound=frozenset(args))
    assert _close(evaluate(simp, Database(relations=db), dict(zip(args, row)), outs), got)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(QUERIES), R_rows, S_rows,
       st.dictionaries(st.tuples(small, small), st.sampled_from([1, -1, 2]), max_size=4))
def test_batch_delta_law(q, r, s, batch):
    """Q(D + ΔR) - Q(D) == Δ_batch Q evaluated with the batch as (DELTA R)."""
    db = {"R": r, "S": s}
    new_r = dict(r)
    for k, v in batch.items():
        new_r[k] = new_r.get(k, 0) + v
    new_r = {k: v for k, v in new_r.items() if v}
    outs = tuple(q.group)
    before = evaluate(q, Database(relations=db), {}, outs)
    after = evaluate(q, Database(relations={"R": new_r, "S": s}), {}, outs)
    d = delta(q, Event("batch", "R", ()))
    got = evaluate(d, Database(relations=db, deltas={"R": batch}), {}, outs)
    assert _close(_minus(after, before), got)


def test_schema_of_products_passes_bindings():
    e = Prod((Rel("R", (A, B)), Cmp("<", A, C), Value(B)))
    ins, outs = schema(e)
    assert ins == {C} and outs == {A, B}
