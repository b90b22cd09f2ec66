"""Input blocks evaluated by Arrow (toaster/backends/spark/input_arrow.py) against the native
partition program they replace: the same temps, entry for entry, over random batches with
deletions, strings, dates, several statements per block and sums of products. No Spark: the
partition program is JIT'd in this process as the driver does (job_plan._driver_module)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toaster.backends.spark import input_arrow, native_exec as nx
from toaster.backends.spark.job_plan import _Held
from toaster.backends.spark.native_input import _read_slice, batch_slices
from toaster.calculus import ir as C
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import random_stream
from toaster.types import INT

SCHEMA = """CREATE STREAM ORD(OK int, CK int, ODATE date, PRIO int, SEG string) FROM FILE 'o.csv' LINE DELIMITED csv;
CREATE STREAM LI(OK int, PK int, QTY float, PRICE float, DISC float, SDATE date, NOTE string)
  FROM FILE 'l.csv' LINE DELIMITED csv;
CREATE STREAM PART(PK int, BRAND string) FROM FILE 'p.csv' LINE DELIMITED csv;
"""
QUERIES = {
    # Q3-like: a date filter, a product with (1 - DISC), keys from both streams
    "join": SCHEMA + """SELECT L.OK, O.ODATE, O.PRIO, SUM(L.PRICE * (1 - L.DISC)) AS REV
        FROM ORD O, LI L WHERE L.OK = O.OK AND L.SDATE > DATE('1994-03-01') AND O.SEG <> 'x'
        GROUP BY L.OK, O.ODATE, O.PRIO;""",
    # Q6-like global sum with a range
    "global": SCHEMA + """SELECT SUM(L.PRICE * L.DISC) AS REV FROM LI L
        WHERE L.QTY < 3 AND L.DISC >= 0.1 AND L.DISC <= 0.5;""",
    # Q17-like nested average: two sums per part key and one per (part, quantity)
    "nested": SCHEMA + """SELECT SUM(L.PRICE) AS S FROM LI L, PART P
        WHERE P.PK = L.PK AND P.BRAND = 'b1'
        AND L.QTY < (SELECT 0.5 * AVG(L2.QTY) FROM LI L2 WHERE L2.PK = P.PK);""",
    # string group keys, an integer sum of an integer column, a count
    "strings": SCHEMA + """SELECT O.SEG, SUM(O.PRIO) AS P, COUNT(*) AS N FROM ORD O
        WHERE O.SEG = 'a' OR O.CK > 1 GROUP BY O.SEG;""",
}
DOMAINS = {"SEG": ["a", "b", "x"], "NOTE": ["n1", "n2", "n3"], "BRAND": ["b1", "b2"]}


def _native_entries(nm, ib, data):
    cols, signs = _read_slice(data, nm.pp.map_types[ib.delta][0])
    nm.add(ib.delta, [(cols, signs)])
    for n in nm.pp.fresh[ib.block]:
        nm.add(n, ())
    nm.run_block(ib.block)
    out = {w: nm.entries(w) for w in ib.writes}
    nm.add(ib.delta, ())
    return out


def _as_dict(cols, vals):
    return {tuple(c[i] for c in cols): vals[i] for i in range(len(vals))}


def _module(prog, name):
    spec = {"native": _Held(prog.native), "native_key": prog.native.key, "native_opt": 0,
            "store": f"arrow-test-{name}"}
    nm = nx.module_for(spec)
    nm.activate(spec["store"], 0)
    return nm


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_arrow_input_blocks_equal_the_native_ones(name):
    comp = compile_sql(QUERIES[name], mode="batch")
    prog = comp.stage("spark")
    inputs = prog.native.inputs
    assert inputs and all(ib.plan is not None for ib in inputs.values()), name
    nm = _module(prog, name)
    batches = random_stream(comp.m3.relations, seed=sorted(QUERIES).index(name), n_batches=12, min_batch=1,
                            max_batch=60, deletes=True, delete_fraction=0.4, domains=DOMAINS)
    import pyarrow as pa
    checked = 0
    for b in batches:
        ib = inputs.get(b.relation.upper())
        if ib is None or not len(b):
            continue
        data = batch_slices(b, 1, ib.columns)[0]
        table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()
        got = input_arrow.run_plan(ib.plan, table, table.column("s").to_numpy())
        want = _native_entries(nm, ib, data)
        assert set(got) == set(ib.writes)
        for w in ib.writes:
            g, e = _as_dict(*got[w]), _as_dict(*want[w])
            assert g.keys() == e.keys(), (name, w)
            for k in e:
                assert math.isclose(g[k], e[k], rel_tol=1e-9, abs_tol=1e-9), (name, w, k)
            checked += len(e)
    assert checked


def test_an_integer_sum_that_could_overflow_runs_natively_and_fails():
    """The Arrow path never wraps: a slice whose integer sums could pass 64 bits is left to the
    native block, which raises the overflow the interpreter would."""
    comp = compile_sql(QUERIES["strings"], mode="batch")
    prog = comp.stage("spark")
    ib = prog.native.inputs["ORD"]
    ord_ = next(r for r in comp.m3.relations if r.name == "ORD")
    big = 2 ** 62
    b = Batch.from_rows("ORD", ord_.types, [(1, 5, 19940101, big, "a"), (2, 5, 19940101, big, "a")], [1, 1])
    data = batch_slices(b, 1, ib.columns)[0]
    import pyarrow as pa
    table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()
    assert input_arrow.run_plan(ib.plan, table, table.column("s").to_numpy()) is None
    with pytest.raises(nx.NativeBlockError):
        _native_entries(_module(prog, "overflow"), ib, data)


def test_a_constant_factor_counts_once_per_row_in_the_overflow_bound():
    """{-1} * {PRIO} over many rows: the bound is the sum over rows, not the constant once."""
    from toaster.m3.ir import Statement
    from toaster.schema import Column, RelationDecl
    import pyarrow as pa
    rel = RelationDecl("R", (Column("A", INT), Column("B", INT)), "stream")
    a, b = C.Var("A", INT), C.Var("B", INT)
    rhs = C.AggSum((), C.Prod((C.DeltaRel("R", (a, b)), C.Value(C.Const(2 ** 61, INT)))))
    plan = input_arrow.compile_plan([Statement("T", (), ":=", rhs)], rel, {"T": INT})
    table = pa.table({"c0": np.arange(4), "c1": np.arange(4), "s": np.ones(4, np.int8)})
    assert input_arrow.run_plan(plan, table.slice(0, 1), np.ones(1, np.int8))["T"][1][0] == 2 ** 61
    assert input_arrow.run_plan(plan, table, np.ones(4, np.int8)) is None      # 2^63 would wrap


def test_unknown_shapes_have_no_plan():
    """A function, a lift or a repeated variable: the block stays native (compile_plan: None)."""
    from toaster.m3.ir import Statement
    from toaster.schema import Column, RelationDecl
    from toaster.types import FLOAT
    rel = RelationDecl("R", (Column("A", INT), Column("B", FLOAT)), "stream")
    a, b = C.Var("A", INT), C.Var("B", FLOAT)
    d = C.DeltaRel("R", (a, b))

    def plan(rhs, keys=(a,)):
        return input_arrow.compile_plan([Statement("T", keys, ":=", rhs)], rel, {"T": FLOAT})
    assert plan(C.AggSum((a,), C.Prod((d, C.Value(b), C.Cmp("<", a, C.Const(3, INT)))))) is not None
    assert plan(C.AggSum((a,), C.Prod((d, C.Value(C.Func("abs", (b,), FLOAT)))))) is None
    assert plan(C.AggSum((a,), C.Prod((d, C.Lift(C.Var("Z", FLOAT), C.Value(b)))))) is None
    assert plan(C.AggSum((a,), C.DeltaRel("R", (a, a)))) is None
    assert plan(C.AggSum((a,), C.Prod((d, C.Value(C.Arith("*", (a, a), INT)))))) is None   # int arithmetic
    assert np.array_equal(sorted(input_arrow.columns_of(plan(C.AggSum((a,), C.Prod((d, C.Value(b))))))), [0, 1])


def test_a_delta_with_repeated_multi_column_keys_replays_to_the_same_map():
    """NativeModule.touched does not deduplicate keys of several columns (a repeat carries the
    key's final value); catch-up's setmany applies repeats idempotently: the replica equals the map."""
    comp = compile_sql(QUERIES["nested"], mode="batch")
    prog = comp.stage("spark")
    nm = _module(prog, "repeats")
    view = next(n for n, (k, _) in prog.native.map_types.items()
                if len(k) == 2 and n in prog.native.views)
    keys = [np.array([1, 2, 1, 3, 2]), np.array([1.0, 2.0, 1.0, 5.0, 2.0])]
    nm.log(True)
    nm._call_bulk(view, "addmany", [k[:3] for k in keys], np.array([1.0, 2.0, 3.0]))
    nm._call_bulk(view, "addmany", [k[2:] for k in keys], np.array([-4.0, 6.0, 1.0]))
    cols, vals = nm.touched(view)
    nm.log(False)
    want = _as_dict(*nm.entries(view))
    assert len(want) < len(set(zip(*keys)))                  # a key summed to 0 is removed
    twice = [np.concatenate([c, c]) for c in cols]          # every key repeated
    nm.activate("arrow-test-repeats", 1)                     # a fresh replica of another partition
    nm.set_entries(view, twice, np.concatenate([vals, vals]))
    assert _as_dict(*nm.entries(view)) == want
