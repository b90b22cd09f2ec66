"""TPC-H Q22 with one-row driver values Broadcast (m3_to_dist{scalar_broadcast},
toaster/dist/scalar_broadcast.py): in the CUSTOMER trigger the AVG(C_ACCTBAL) is one row on the
driver, Broadcast to the customer views where they lie, so that trigger Gathers no view and is one
job. The ORDERS trigger reads NUMCUST_mORDERS8, which it writes later, so its nested aggregates
and driver values stay on the driver (a Broadcast would be a temp made before that write and read
after it): it still Gathers that view (2 jobs)."""
from __future__ import annotations

from pathlib import Path

from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.pipeline import compile_file
from toaster.testing import Oracle, compare_results, random_stream

Q22 = Path(__file__).parent / "queries" / "tpch" / "q22.sql"


def _whole_view_gathers(dist) -> list:
    """Views (not temps) a trigger Gathers whole to the driver."""
    views = {m.name for m in dist.maps if m.kind != "temp"}
    return sorted({x.source for t in dist.triggers for b in t.blocks if b.mode == "exchange"
                   for x in b.items if x.kind == "gather" and x.source in views})


def test_q22_plans_fewer_jobs_and_broadcasts_the_avg():
    """2 jobs of 4 stages for a step of both streams, the CUSTOMER trigger 1 job of 2 stages (was 3
    jobs, 6 stages; the customer views were Gathered to the driver, then its result Scattered
    back); the A/B option gives the old plan back, so this test fails if the broadcast is lost."""
    prog = compile_file(str(Q22), mode="batch").stage("spark")
    text = explain_jobs(prog)
    assert "a batch of every stream (ORDERS, CUSTOMER): 2 job(s), 4 stage(s)" in text
    assert "ORDERS alone: 2 job(s), 3 stage(s)" in text and "CUSTOMER alone: 1 job(s), 2 stage(s)" in text
    assert "one-row driver values Broadcast to join partitioned views where they lie" in text
    assert _whole_view_gathers(prog.dist) == ["NUMCUST_mORDERS8"]
    broadcasts = [x for t in prog.dist.triggers for b in t.blocks if b.mode == "exchange"
                  for x in b.items if x.kind == "broadcast"]
    assert len(broadcasts) == 1 and all(prog.dist.map(x.source).keys and len(prog.dist.map(x.source).keys) == 1
                                        for x in broadcasts)      # the AVG, one float column
    old = compile_file(str(Q22), mode="batch",
                       pass_options={"m3_to_dist": {"scalar_broadcast": False}}).stage("spark")
    assert "a batch of every stream (ORDERS, CUSTOMER): 3 job(s), 6 stage(s)" in explain_jobs(old)
    assert not any(x.kind == "broadcast" for t in old.dist.triggers for b in t.blocks if b.mode == "exchange"
                   for x in b.items)


def test_q22_runs_at_most_two_jobs_per_step_duckdb_equal(spark, tmp_path):
    """Steps of inserts and deletes of both relations: at most 2 Spark jobs each
    (jobs_last_batch), DuckDB-equal after every step."""
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
        assert max(jobs) == 2 and all(j <= 2 for j in jobs), jobs
        assert any(engine.read_map(v) for v in prog.native.driver_views)    # the AVG's inputs
    finally:
        engine.close()
        oracle.close()
