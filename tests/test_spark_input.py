"""Executors read their slice of a batch (issue 10 item 4, docs/spark-engine.md "Batch input"):
a trigger whose first block is a linear pre-aggregation of the batch runs it natively in the
executors, each on a row range of the batch's columns; no row becomes a Python object on the
driver. Every view equals DuckDB's after every batch, deletions included."""
from __future__ import annotations

import pytest

from toaster.backends.spark import engine as spark_engine
from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.backends.spark.native_input import linear_in
from toaster.backends.spark.runtime import planned_counts
from toaster.calculus import ir as C
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream
from toaster.types import FLOAT, INT

# Q3-, Q6- and Q17-shaped queries of our own (three streams joined, a filtered global sum, a
# correlated nested aggregate)
SCHEMA = """CREATE STREAM CUST(CK int, SEG string) FROM FILE 'c.csv' LINE DELIMITED csv;
CREATE STREAM ORD(OK int, CK int, ODATE date, PRIO int) FROM FILE 'o.csv' LINE DELIMITED csv;
CREATE STREAM LI(OK int, PK int, QTY float, PRICE float, DISC float, SDATE date, NOTE string)
  FROM FILE 'l.csv' LINE DELIMITED csv;
CREATE STREAM PART(PK int, BRAND string) FROM FILE 'p.csv' LINE DELIMITED csv;
"""
Q3 = SCHEMA + """SELECT L.OK, O.ODATE, O.PRIO, SUM(L.PRICE * (1 - L.DISC)) AS REV
FROM CUST C, ORD O, LI L WHERE C.CK = O.CK AND L.OK = O.OK AND C.SEG <> 'x'
GROUP BY L.OK, O.ODATE, O.PRIO;"""
Q6 = SCHEMA + """SELECT SUM(L.PRICE * L.DISC) AS REV FROM LI L WHERE L.QTY < 3 AND L.DISC >= 0;"""
Q17 = SCHEMA + """SELECT SUM(L.PRICE) AS AVG_YEARLY FROM LI L, PART P
WHERE P.PK = L.PK AND L.QTY < (SELECT 0.5 * AVG(L2.QTY) FROM LI L2 WHERE L2.PK = P.PK);"""


def _run(spark, sql, batches, step, inputs_expected, tmp_path, monkeypatch, pass_options=None):
    """Apply `batches` (`step` relations per apply_many) and compare with DuckDB after each."""
    comp = compile_sql(sql, mode="batch", pass_options=pass_options)
    prog = comp.stage("spark")
    assert set(prog.native.inputs) == set(inputs_expected)
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=7,
                         checkpoint_dir=str(tmp_path / "ckpt"))
    real = spark_engine.net_delta

    def net_delta(batch):      # only relations without an input block are made into row dicts
        assert batch.relation.upper() not in inputs_expected, batch.relation
        return real(batch)
    monkeypatch.setattr(spark_engine, "net_delta", net_delta)
    oracle = Oracle(comp.m3.relations)
    cls = engine.module.Program
    try:
        for i in range(0, len(batches), step):
            group = batches[i:i + step]
            engine.apply_many(group)
            for b in group:
                oracle.apply(b)
            for q, sql_q in zip(comp.queries, comp.oracle_sql):
                assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
            rels = list(dict.fromkeys(b.relation.upper() for b in group if len(b)
                                      and b.relation.upper() in cls.TRIGGERS))
            if not rels:
                continue                  # no trigger ran: the counts are the last batch's
            jobs, stages = planned_counts(cls, rels, prog.native.inputs)
            assert engine.stages_last_batch == stages, (i, rels)
            assert engine.jobs_last_batch in (jobs, jobs + 1), (i, rels)     # + a snapshot job
    finally:
        engine.close()
        oracle.close()
    return prog


def _stream(comp_sql, seed, n, max_batch=40):
    comp = compile_sql(comp_sql, mode="batch")
    domains = {"SEG": ["a", "b", "x"], "NOTE": ["n1", "n2", "n3"], "BRAND": ["b1", "b2"]}
    return random_stream(comp.m3.relations, seed=seed, n_batches=n, min_batch=1, max_batch=max_batch,
                         deletes=True, delete_fraction=0.4, domains=domains)


def test_q3_shape_three_streams_one_job_per_step(spark, tmp_path, monkeypatch):
    """CUST's view (the customers passing the filter) is replicated and CUST's batch broadcast
    (placement.choose_replicated), so every view is partitioned by the order key and a step of
    all three streams is stage 0 (ORD's and LI's slices pre-aggregated by the executors) and one
    stage of every trigger's dist block: 2 stages (3 before); each step's stages equal the
    planned ones and every view equals DuckDB after every step, replicas included (_run)."""
    from toaster.backends.spark import native_input
    on_driver = []
    real = native_input.run_on_driver

    def run_on_driver(get_nm, inputs, parts, scattered):       # the native driver path, counted
        on_driver.extend(e[0].relation for e in inputs)
        return real(get_nm, inputs, parts, scattered)
    monkeypatch.setattr(native_input, "run_on_driver", run_on_driver)
    # CUST's broadcast batch is an input block too: never a row dict (_run's net_delta check), no
    # generated Python block per row; its block runs on the driver over Arrow columns
    prog = _run(spark, Q3, _stream(Q3, 11, 24), 3, {"CUST", "ORD", "LI"}, tmp_path, monkeypatch,
                {"m3_to_dist": {"broadcast": "CUST"}})       # CUST's batches are small (no source file here)
    assert prog.native.inputs["CUST"].broadcast and not prog.native.inputs["ORD"].broadcast
    assert "CUST" in on_driver
    text = explain_jobs(prog)
    assert "pre-aggregated natively on the driver and broadcast (Arrow/numpy or the partition " \
           "program's native code, no Python per row): CUST" in text
    assert "batch input read by the executors (each task pre-aggregates its slice natively, one " \
           "stage more): ORD, LI" in text
    assert "a batch of every stream (CUST, ORD, LI): 1 job(s), 2 stage(s)" in text
    assert "replicated views (whole on every partition, updated by the broadcast batch): " \
           "REV_mCUST3; batches broadcast to every partition: CUST" in text


SELF_JOIN = SCHEMA + """SELECT O.PRIO, SUM(O2.PRIO) AS S FROM ORD O, ORD O2, LI L
WHERE O.CK = O2.CK AND L.OK = O.OK GROUP BY O.PRIO;"""


def test_a_block_not_linear_in_its_batch_runs_natively_on_the_driver(spark, tmp_path, monkeypatch):
    """ORD joined with itself: ORD's first block multiplies its batch by itself (not linear: no
    split into slices), so it runs natively on the driver over the whole batch (run_on_driver:
    Arrow columns in, no row dict, no generated Python per row); DuckDB-equal after every step."""
    from toaster.backends.spark import native_input
    on_driver = []
    real = native_input.run_on_driver

    def run_on_driver(get_nm, inputs, parts, scattered):
        on_driver.extend(e[0].relation for e in inputs)
        return real(get_nm, inputs, parts, scattered)
    monkeypatch.setattr(native_input, "run_on_driver", run_on_driver)
    prog = _run(spark, SELF_JOIN, _stream(SELF_JOIN, 14, 10), 2, {"ORD", "LI"}, tmp_path, monkeypatch)
    ib = prog.native.inputs["ORD"]
    assert ib.nonlinear and ib.plan is None and not prog.native.inputs["LI"].on_driver
    assert "ORD" in on_driver and "LI" not in on_driver
    assert "on the driver, whole (not linear in the batch; the partition program's native code, no " \
           "Python per row): ORD" in explain_jobs(prog)


def test_q6_shape_global_sum(spark, tmp_path, monkeypatch):
    _run(spark, Q6, _stream(Q6, 12, 12), 1, {"LI"}, tmp_path, monkeypatch)


def test_q17_shape_nested_aggregate(spark, tmp_path, monkeypatch):
    """The nested AVG per part key is evaluated next to the views partitioned by part key
    (placement._co_partitioned): only partial sums are Gathered, both batches are read by the
    executors, one job per step."""
    prog = _run(spark, Q17, _stream(Q17, 13, 16), 2, {"LI", "PART"}, tmp_path, monkeypatch)
    text = explain_jobs(prog)
    assert "read by the executors (each task pre-aggregates its slice natively, one stage more): LI, PART" in text
    assert "of which evaluated by Arrow/numpy, not the native block (filters, products, one hash " \
           "group-by: input_arrow.py): LI, PART" in text
    assert "a batch of every stream (LI, PART): 1 job(s)" in text
    views = {n for n, tag in prog.dist.tags().items() if tag.kind != "temp"}
    gathered = {x.source for t in prog.dist.triggers for b in t.blocks if b.mode == "exchange"
                for x in b.items if x.kind == "gather"}
    assert gathered and not gathered & views         # no view moves whole to the driver


def test_a_row_inserted_and_deleted_in_one_batch_cancels_across_slices(spark, tmp_path, monkeypatch):
    """The first slice inserts a row the second deletes: the sums cancel (linearity)."""
    comp = compile_sql(Q6, mode="batch")
    li = next(r for r in comp.m3.relations if r.name == "LI")
    row = (1, 2, 1.0, 10.0, 0.5, 19940101, "n1")
    other = (2, 2, 1.0, 4.0, 0.25, 19940101, "n2")
    batches = [Batch.from_rows("LI", li.types, [row, other, other, row], [1, 1, 1, -1])]
    _run(spark, Q6, batches, 1, {"LI"}, tmp_path, monkeypatch)


def test_linear_in_refuses_batch_under_lift_comparison_or_constant_term():
    x, y = C.Var("X", INT), C.Var("Y", FLOAT)
    d = C.DeltaRel("R", (x, y))
    assert linear_in(C.AggSum((x,), C.Prod((d, C.Value(y), C.Cmp("<", x, C.Const(3, INT))))), "R")
    assert linear_in(C.Sum((d, C.Prod((d, C.Value(y))))), "R")
    assert not linear_in(C.Prod((d, d)), "R")                                   # a self-join
    assert not linear_in(C.Sum((d, C.Value(C.Const(1, INT)))), "R")             # a constant term
    assert not linear_in(C.Lift(C.Var("Z", INT), C.AggSum((), d)), "R")        # an aggregate lifted
    assert not linear_in(C.Prod((C.Rel("S", (x,)), C.Value(y))), "R")           # no batch at all


def test_a_bad_line_rejects_its_batch_with_file_line_column(spark, tmp_path, monkeypatch):
    """As `--run` feeds the engine: the CSV reader's batches go to the executors as columns; the
    batch holding a malformed line is rejected whole, naming file:line:column, and the views are
    those of the batches before it (DuckDB over the same batches)."""
    from toaster.errors import InputError
    from toaster.runtime.csv_source import iter_source
    good = [f"{i},{i % 3},{i % 4}.0,{i}.5,0.{i % 7},1994-0{1 + i % 9}-11,n{i % 2}" for i in range(1, 9)]
    lines = good[:7] + ["8,1,x,2.0,0.1,1994-01-01,n1"] + good[7:]
    (tmp_path / "l.csv").write_text("\n".join(lines) + "\n")
    comp = compile_sql(Q6, mode="batch", base_dir=str(tmp_path))
    decl = next(r for r in comp.m3.relations if r.name == "LI")
    applied = []
    with pytest.raises(InputError, match=r"l\.csv:8:5"):
        for b in iter_source(decl, batch_size=3, base_dir=str(tmp_path)):
            applied.append(b)
    assert sum(len(b) for b in applied) == 6          # batches 1-2; the third (lines 7-9) rejected
    _run(spark, Q6, applied, 1, {"LI"}, tmp_path, monkeypatch)
