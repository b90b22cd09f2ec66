"""TPC-H Q22 in one Spark job per step (m3_to_dist{scalar_broadcast}, toaster/dist/scalar_broadcast.py):
the AVG(C_ACCTBAL) and the count behind it are one row on the driver, Broadcast to the customer
views where they lie, so no view is Gathered to the driver and no Scatter waits for a job."""
from __future__ import annotations

from pathlib import Path

from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.calculus import ir as C
from toaster.dist.ir import Gather
from toaster.pipeline import compile_file
from toaster.testing import Oracle, compare_results, random_stream

Q22 = Path(__file__).parent / "queries" / "tpch" / "q22.sql"


def _whole_view_gathers(dist) -> list:
    """Views (not temps) a trigger Gathers whole to the driver."""
    views = {m.name for m in dist.maps if m.kind != "temp"}
    return sorted({x.source for t in dist.triggers for b in t.blocks if b.mode == "exchange"
                   for x in b.items if x.kind == "gather" and x.source in views})


def test_q22_plans_one_job_and_gathers_no_view():
    """One job of 2 stages per step (was 3 jobs, 6 stages: the customer views and the order
    counts were Gathered to the driver, then its result Scattered back); the A/B option gives
    the old plan back, so this test fails if the broadcast is lost."""
    prog = compile_file(str(Q22), mode="batch").stage("spark")
    text = explain_jobs(prog)
    assert "a batch of every stream (ORDERS, CUSTOMER): 1 job(s), 2 stage(s)" in text
    assert "ORDERS alone: 1 job(s), 2 stage(s)" in text and "CUSTOMER alone: 1 job(s), 2 stage(s)" in text
    assert "one-row driver values Broadcast to join partitioned views where they lie" in text
    assert _whole_view_gathers(prog.dist) == []
    broadcasts = [x for t in prog.dist.triggers for b in t.blocks if b.mode == "exchange"
                  for x in b.items if x.kind == "broadcast"]
    assert len(broadcasts) == 2 and all(prog.dist.map(x.source).keys and len(prog.dist.map(x.source).keys) == 1
                                        for x in broadcasts)      # the AVG, one float column
    old = compile_file(str(Q22), mode="batch",
                       pass_options={"m3_to_dist": {"scalar_broadcast": False}}).stage("spark")
    assert "a batch of every stream (ORDERS, CUSTOMER): 3 job(s), 6 stage(s)" in explain_jobs(old)
    assert "NUMCUST_mORDERS8" in _whole_view_gathers(old.dist)
    # the ORDERS batch travels as its count per customer, not as rows
    scattered = [prog.dist.map(x.source) for t in prog.dist.triggers if t.event.relation == "ORDERS"
                 for b in t.blocks if b.mode == "exchange" for x in b.items if x.kind == "scatter"]
    assert [len(m.keys) for m in scattered] == [1]
    assert not any(isinstance(n, Gather) for t in prog.dist.triggers for b in t.blocks for it in b.items
                   if hasattr(it, "stmt") for n in C.subterms(it.stmt.rhs))


def test_q22_runs_one_job_per_step_duckdb_equal(spark, tmp_path):
    """Steps of inserts and deletes of both relations: one Spark job each (jobs_last_batch),
    DuckDB-equal after every step."""
    comp = compile_file(str(Q22), mode="batch")
    prog = comp.stage("spark")
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=1000,
                         checkpoint_dir=str(tmp_path / "c"), native_opt=0)
    oracle = Oracle(comp.m3.relations)
    rels = [r for r in comp.m3.relations if r.name in ("CUSTOMER", "ORDERS")]
    domains = {"C_PHONE": ["13-555", "31-555", "23-555", "29-555", "30-555", "18-555", "17-555", "11-555"]}
    batches = random_stream(rels, seed=2214, n_batches=10, min_batch=5, max_batch=40, deletes=True,
                            delete_fraction=0.3, domains=domains)
    jobs = []
    try:
        for i in range(0, len(batches), 2):
            engine.apply_many(batches[i:i + 2])
            jobs.append(engine.jobs_last_batch)
            for b in batches[i:i + 2]:
                oracle.apply(b)
            for q, sql_q in zip(comp.queries, comp.oracle_sql):
                assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
        assert jobs == [1] * len(jobs)
        assert any(engine.read_map(v) for v in prog.native.driver_views)    # the AVG's inputs
    finally:
        engine.close()
        oracle.close()
