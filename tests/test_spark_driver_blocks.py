"""The driver's local blocks as native code (native_driver.py): a batch joined with Gathered
views on the driver (the TPC-H Q4 shape) runs in the driver's JIT of the partition program,
over the batch's and the gathered maps' columns: no row dict, no generated Python per row."""
from __future__ import annotations

from datetime import date

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
# Q4's shape: each trigger Gathers a view and joins its batch with it in a local block
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
    comp = compile_sql(EXISTS, mode="batch")
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
    prog = compile_sql(EXISTS, mode="batch", pass_options={"dist_to_spark": {"driver_native": False}}).stage("spark")
    assert not prog.native.driver and not prog.native.columnar
    assert "pre-aggregated on the driver (its first block is not a linear pre-aggregation scattered " \
           "to the executors): ORD, LI" in explain_jobs(prog)


def test_columns_sum_repeated_keys_and_drop_zeros():
    import numpy as np
    c = Columns([([np.array([1, 2])], np.array([3, 4])), ([np.array([2, 1])], np.array([-4, 1]))])
    assert c.as_dict() == {(1,): 4}
    cols, vals = c.merged()
    assert cols[0].tolist() == [1, 2, 2, 1] and vals.tolist() == [3, 4, -4, 1]

