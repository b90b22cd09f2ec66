"""The driver's local blocks as native code (native_driver.py): a batch joined with Gathered
views on the driver (the TPC-H Q4 shape) runs in the driver's JIT of the partition program,
over the batch's and the gathered maps' columns: no row dict, no generated Python per row."""
from __future__ import annotations

from datetime import date

import numpy as np
import pyarrow as pa
import pytest

from toaster.backends.spark import engine as spark_engine
from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.backends.spark.native_driver import Columns
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

SCHEMA = """CREATE STREAM ORD(OK int, CK int, ODATE date, PRIO string) FROM FILE 'o.csv' LINE DELIMITED csv;
CREATE STREAM LI(OK int, PK int, QTY float, PRICE float, DISC float, SDATE date, NOTE string)
  FROM FILE 'l.csv' LINE DELIMITED csv;
"""
# Q4's shape: each trigger Gathers a view and joins its batch with it in a local block (the plan
# of m3_to_dist{scalar_broadcast=false}; by default ORD's EXISTS count runs on the workers)
GATHER_PLAN = {"m3_to_dist": {"scalar_broadcast": False}}
EXISTS = SCHEMA + """SELECT O.PRIO, COUNT(*) AS N, SUM(O.CK) AS S FROM ORD O
WHERE EXISTS (SELECT * FROM LI L WHERE L.OK = O.OK AND L.QTY < 3) GROUP BY O.PRIO;"""


def _stream(sql, seed, n):
    comp = compile_sql(sql, mode="batch")
    domains = {"PRIO": ["1-URGENT", "2-HIGH", "3-LOW"], "NOTE": ["n1", "n2"]}
    return random_stream(comp.m3.relations, seed=seed, n_batches=n, min_batch=1, max_batch=30,
                         deletes=True, delete_fraction=0.4, domains=domains)


def test_gather_join_blocks_run_natively_on_the_driver_and_overflow_undoes_the_batch(spark, tmp_path, monkeypatch):
    """Both triggers' local blocks are driver blocks: the generated Python functions are never
    called, the batches never become row dicts (net_delta), the gathered views reach the blocks
    as columns; every step equals DuckDB (deletions included, 2 relations per step); an integer
    overflow in a driver block raises from the driver's native code and undoes the batch."""
    comp = compile_sql(EXISTS, mode="batch", pass_options=GATHER_PLAN)
    prog = comp.stage("spark")
    assert set(prog.native.driver) == {"local_block_1", "local_block_3"}
    assert prog.native.columnar == {"ORD", "LI"} and not prog.native.inputs
    text = explain_jobs(prog)
    assert "batch input joined on the driver by native driver blocks (the batch's columns, no Python " \
           "per row): ORD, LI" in text
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=3,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    mod = engine.module
    python_calls = []
    for fn in prog.native.driver:      # the generated Python twins, counted when given rows (the
        real = getattr(mod, fn)         # planner's dry run, best_order, calls them on empty maps)
        monkeypatch.setattr(mod, fn, lambda *a, _fn=fn, _real=real:
                            (any(len(m) for m in a) and python_calls.append(_fn), _real(*a))[1])
    made_dicts = []
    real_net = spark_engine.net_delta
    monkeypatch.setattr(spark_engine, "net_delta", lambda b: (made_dicts.append(b.relation), real_net(b))[1])
    gathered = []
    real_run = type(engine.program)._driver_module

    def driver_module(rt):          # what the blocks read when the driver JIT runs them
        gathered.extend(type(v).__name__ for k, v in rt.local.items() if k.startswith("TMP_"))
        return real_run(rt)
    monkeypatch.setattr(type(engine.program), "_driver_module", driver_module)
    oracle = Oracle(comp.m3.relations)
    batches = _stream(EXISTS, 21, 8)
    ords, lis = engine.relations["ORD"].types, engine.relations["LI"].types
    d = date(1995, 1, 1)
    # ORD's driver block sums CK per priority into a temp: 2 * 2^62 leaves 64 bits there, in the
    # driver's native code: IntegerOverflowError, the batch undone (checked at the end)
    li = Batch.from_rows("LI", lis, [(k, 1, 1.0, 1.0, 0.0, d, "n1") for k in (10 ** 6, 10 ** 6 + 1)])
    big = Batch.from_rows("ORD", ords, [(k, 2 ** 62, d, "1-URGENT") for k in (10 ** 6, 10 ** 6 + 1)])
    try:
        for i in range(0, len(batches) + 2, 2):
            group = batches[i:i + 2] or [li]
            engine.apply_many(group)
            for b in group:
                oracle.apply(b)
            for q, sql_q in zip(comp.queries, comp.oracle_sql):
                assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
        with pytest.raises(IntegerOverflowError) as raised:
            engine.apply(big)
        # raised by the driver's JIT itself (an executor's failure arrives as a Spark job error)
        assert type(raised.value.__context__).__name__ == "NativeBlockError"
        for q, sql_q in zip(comp.queries, comp.oracle_sql):
            assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns))
    finally:
        engine.close()
        oracle.close()
    assert python_calls == [] and made_dicts == []
    assert gathered and set(gathered) == {Columns.__name__}


def test_driver_native_off_keeps_the_python_blocks():
    """`dist_to_spark{driver_native=false}`: the local blocks stay generated Python (the A/B of
    bench.spark_state.input_cpu); the relations are made into row dicts."""
    prog = compile_sql(EXISTS, mode="batch",
                       pass_options={**GATHER_PLAN, "dist_to_spark": {"driver_native": False}}).stage("spark")
    assert not prog.native.driver and not prog.native.columnar
    assert "pre-aggregated on the driver (its first block is not a linear pre-aggregation scattered " \
           "to the executors): ORD, LI" in explain_jobs(prog)


def test_columns_sum_repeated_keys_and_drop_zeros():
    import numpy as np
    c = Columns([([np.array([1, 2])], np.array([3, 4])), ([np.array([2, 1])], np.array([-4, 1]))])
    assert c.as_dict() == {(1,): 4}
    cols, vals = c.merged()
    assert cols[0].tolist() == [1, 2, 2, 1] and vals.tolist() == [3, 4, -4, 1]



def test_driver_blocks_load_only_the_batch_columns_they_read(spark):
    """A driver block loads only the batch columns it reads: ORD's block (linear in its batch)
    sums rows that differ elsewhere; LI's EXISTS block (not linear) gets its net rows numbered
    in an unread int column (PK), so rows differing only in unread columns stay apart. The
    unread strings (NOTE) never reach the driver's string pool; every step equals DuckDB,
    including rows that differ only in NOTE and cancel across the step."""
    comp = compile_sql(EXISTS, mode="batch", pass_options=GATHER_PLAN)
    prog = comp.stage("spark")
    ord_block, li_block = prog.native.driver["local_block_1"], prog.native.driver["local_block_3"]
    assert (ord_block.delta, ord_block.linear, ord_block.surrogate) == ("DELTA_ORD", True, None)
    assert 2 not in ord_block.columns and 3 in ord_block.columns          # ODATE unread, PRIO read
    assert (li_block.delta, li_block.columns, li_block.linear, li_block.surrogate) == ("DELTA_LI", (0, 2), False, 1)
    engine = SparkEngine(prog, spark=spark, partitions=2)
    oracle = Oracle(comp.m3.relations)
    ords, lis = engine.relations["ORD"].types, engine.relations["LI"].types
    d = date(1995, 1, 1)
    steps = [
        [Batch.from_rows("ORD", ords, [(1, 5, d, "1-URGENT"), (2, 6, d, "2-HIGH"), (3, 7, d, "1-URGENT")]),
         Batch.from_rows("LI", lis, [(1, 1, 1.0, 1.0, 0.0, d, "note-a"), (1, 2, 1.0, 2.0, 0.0, d, "note-b"),
                                     (2, 1, 1.0, 1.0, 0.0, d, "note-c"), (3, 1, 5.0, 1.0, 0.0, d, "note-d")])],
        # OK 1: one row deleted, a row differing only in NOTE inserted (the two cancel in the
        # columns the block reads); OK 2: its only row deleted, the same row twice inserted
        [Batch("LI", np.array([-1, 1, -1, 1, 1], np.int8),
               Batch.from_rows("LI", lis, [(1, 1, 1.0, 1.0, 0.0, d, "note-a"), (1, 1, 1.0, 1.0, 0.0, d, "note-e"),
                                           (2, 1, 1.0, 1.0, 0.0, d, "note-c"), (2, 1, 1.0, 1.0, 0.0, d, "note-c"),
                                           (2, 1, 1.0, 1.0, 0.0, d, "note-c")]).columns)],
        [Batch("LI", np.array([-1, -1, -1], np.int8),
               Batch.from_rows("LI", lis, [(1, 2, 1.0, 2.0, 0.0, d, "note-b"), (1, 1, 1.0, 1.0, 0.0, d, "note-e"),
                                           (2, 1, 1.0, 1.0, 0.0, d, "note-c")]).columns)],
    ]
    try:
        for i, group in enumerate(steps + [[b] for b in _stream(EXISTS, 4, 6)]):
            engine.apply_many(group)
            for b in group:
                oracle.apply(b)
            for q, sql_q in zip(comp.queries, comp.oracle_sql):
                assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
        pool = engine.program._driver_module().engine._pool.strings
        assert "1-URGENT" in pool and not [s for s in pool if s.startswith("note-") or s in ("n1", "n2")]
    finally:
        engine.close()
        oracle.close()


def test_net_rows_number_rows_apart_in_an_unread_column():
    """net_rows: equal rows summed over every column (zeros dropped), the read columns as they
    are, the numbered column distinct per net row, other unread columns one constant."""
    from toaster.backends.spark.native_driver import net_rows
    from toaster.backends.spark.native_input import ColumnarDelta
    b = Batch("R", np.array([1, -1, 1, 1, -1], np.int8),
              (np.array([1, 1, 1, 2, 2]), np.array([7, 7, 7, 8, 8]), pa.chunked_array([["a", "b", "a", "c", "c"]])))
    (k, p, s), mult = net_rows(ColumnarDelta([b]), (0,), 1, ("int", "int", "string"))
    rows = sorted(zip(k.tolist(), mult.tolist()))
    assert rows == [(1, -1), (1, 2)] and sorted(p.tolist()) == [0, 1]
    assert len(set(s.to_pylist() if hasattr(s, "to_pylist") else s.tolist())) == 1


def test_unread_in_calculus_scopes():
    """A batch column is unread when its variable occurs once in the AggSum summing it out; a
    group key, a comparison or a self-join on it reads it."""
    from toaster.backends.spark.native_driver import _unread_in_calculus
    from toaster.calculus import ir as C
    from toaster.types import INT, STRING
    a, b, n = C.Var("a", INT), C.Var("b", INT), C.Var("n", STRING)
    R = lambda *vs: C.DeltaRel("R", vs)      # noqa: E731
    assert _unread_in_calculus([C.AggSum((a,), R(a, b, n))], "R", 3) == {1, 2}
    assert _unread_in_calculus([C.AggSum((a, n), R(a, b, n))], "R", 3) == {1}          # a group key
    assert _unread_in_calculus([R(a, b, n)], "R", 3) == set()                           # free: target keys
    assert _unread_in_calculus([C.AggSum((a,), C.Prod((R(a, b, n), C.Cmp("<", b, C.Const(3, INT)))))],
                               "R", 3) == {2}
    join = C.AggSum((a,), C.Prod((R(a, b, n), R(b, a, n))))                              # a self-join on n
    assert _unread_in_calculus([join], "R", 3) == set()
    lifted = C.AggSum((a,), C.Prod((C.Lift(C.Var("x", INT), R(a, b, n)), C.Value(C.Var("x", INT)))))
    assert _unread_in_calculus([lifted], "R", 3) == {1, 2}
