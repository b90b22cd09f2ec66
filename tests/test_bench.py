"""bench/: the TPC-H and order-book stream generators, stream loading, and the harness catching
a wrong engine. Runs at TPC-H scale 0.001 (needs tpchgen-cli, the `bench` extra)."""
from __future__ import annotations

import filecmp
import os
import shutil
from collections import Counter

import numpy as np
import pytest

from bench import harness
from bench.finance import generate_finance_stream
from bench.harness import BenchConfig, RunResult, run_benchmark, run_engine
from bench.stream import load_event_stream
from bench.tpch import find_tpchgen, generate_tpch_stream
from toaster.errors import ToasterError

SCALE = 0.001
ACTIVE = (300, 1200)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("benchdata"))


@pytest.fixture(scope="module")
def tpch(data_dir):
    # tpchgen-cli comes with the dev extra; a missing generator fails here rather than skipping
    return generate_tpch_stream(os.path.join(data_dir, "tpch"), SCALE, seed=5, active_orders=ACTIVE[0],
                                active_lineitems=ACTIVE[1], tbl_dir=os.path.join(data_dir, "tbl"))


@pytest.fixture(scope="module")
def tpch_events(tpch):
    return load_event_stream(tpch.schema_sql())


def _replay(es):
    """Every event in stream order as (relation, sign, row)."""
    for r, i in zip(es.order_rel.tolist(), es.order_row.tolist()):
        b = es.per_relation[es.stream_names[r]]
        yield es.stream_names[r], int(b.signs[i]), tuple(c[i] for c in b.columns)


def test_tpch_stream_keeps_referential_integrity_and_active_sizes(tpch, tpch_events):
    es = tpch_events
    assert len(es) == tpch.events and len(es) > 8000
    held = {r: Counter() for r in es.stream_names}
    keys = {"CUSTOMER": Counter(), "PART": Counter(), "SUPPLIER": Counter(), "PARTSUPP": Counter(),
            "ORDERS": Counter()}
    lines_of_order = Counter()
    nations = {row[0] for b in es.tables if b.relation == "NATION" for _, row in b.rows()}
    max_size = Counter()
    deletes = Counter()
    for rel, sign, row in _replay(es):
        if sign < 0:
            deletes[rel] += 1
            assert held[rel][row] > 0, f"delete of an absent {rel} tuple {row[:3]}"
        held[rel][row] += sign
        assert held[rel][row] in (0, 1), f"{rel} tuple {row[:3]} held twice"
        max_size[rel] = max(max_size[rel], sum(held[rel].values()) if rel in ("ORDERS", "LINEITEM") else 0)
        match rel:
            case "CUSTOMER":
                assert row[3] in nations
                keys["CUSTOMER"][row[0]] += sign
            case "SUPPLIER":
                assert row[3] in nations
                keys["SUPPLIER"][row[0]] += sign
            case "PART":
                keys["PART"][row[0]] += sign
            case "PARTSUPP":
                assert keys["PART"][row[0]] > 0 and keys["SUPPLIER"][row[1]] > 0
                keys["PARTSUPP"][(row[0], row[1])] += sign
            case "ORDERS":
                if sign > 0:
                    assert keys["CUSTOMER"][row[1]] > 0, "order before its customer"
                else:
                    assert lines_of_order[row[0]] == 0, "order deleted while it still has line items"
                keys["ORDERS"][row[0]] += sign
            case "LINEITEM":
                if sign > 0:
                    assert keys["ORDERS"][row[0]] > 0, "line item before (or after the deletion of) its order"
                    assert keys["PARTSUPP"][(row[1], row[2])] > 0, "line item before its part-supplier"
                lines_of_order[row[0]] += sign
    final = {r: sum(c.values()) for r, c in held.items()}
    # active sizes: reached, then held (at most one over between an insert and its eviction)
    assert final["ORDERS"] == ACTIVE[0] and max_size["ORDERS"] <= ACTIVE[0] + 1
    assert 0.9 * ACTIVE[1] <= final["LINEITEM"] <= ACTIVE[1] and max_size["LINEITEM"] <= ACTIVE[1] + 1
    assert deletes["ORDERS"] > 0 and deletes["LINEITEM"] > 0
    assert not any(deletes[r] for r in ("CUSTOMER", "PART", "SUPPLIER", "PARTSUPP"))
    for r, c in tpch.counts.items():
        if r in final:
            assert c["final"] == final[r]


def test_tpch_stream_is_deterministic_by_seed(tpch, data_dir):
    again = generate_tpch_stream(os.path.join(data_dir, "tpch-again"), SCALE, seed=5, active_orders=ACTIVE[0],
                                 active_lineitems=ACTIVE[1], tbl_dir=os.path.join(data_dir, "tbl"))
    other = generate_tpch_stream(os.path.join(data_dir, "tpch-other"), SCALE, seed=6, active_orders=ACTIVE[0],
                                 active_lineitems=ACTIVE[1], tbl_dir=os.path.join(data_dir, "tbl"))
    for name in ("orders.csv", "lineitem.csv", "customer.csv", "partsupp.csv"):
        assert filecmp.cmp(os.path.join(tpch.directory, name), os.path.join(again.directory, name), shallow=False)
    assert not filecmp.cmp(os.path.join(tpch.directory, "lineitem.csv"),
                           os.path.join(other.directory, "lineitem.csv"), shallow=False)


def test_batches_preserve_the_stream(tpch_events):
    es = tpch_events
    rels = {"ORDERS", "LINEITEM"}
    n = 3000
    def net(groups):
        c = Counter()
        for g in groups:
            for b in g:
                for s, row in b.rows():
                    c[(b.relation, row)] += s
        return +c
    want = net(es.batches(1, rels, n))
    assert sum(len(b) for g in es.batches(1, rels, n) for b in g) == n
    for size in (7, 500):
        groups = es.batches(size, rels, n)
        assert all(sum(len(b) for b in g) == size for g in groups[:-1])
        assert all(len({b.relation for b in g}) == len(g) for g in groups)
        assert sum(len(b) for g in groups for b in g) == n and net(groups) == want
        # every prefix of whole batches is a prefix of the stream
        k = len(groups) // 2
        assert net(groups[:k]) == net([es.prefix_batches(k * size, rels)])
    assert net([es.prefix_batches(n, rels)]) == want


def test_finance_stream_deletes_only_live_orders(data_dir):
    info = generate_finance_stream(os.path.join(data_dir, "fin"), events=3000, seed=2, brokers=4, book_size=80)
    again = generate_finance_stream(os.path.join(data_dir, "fin2"), events=3000, seed=2, brokers=4, book_size=80)
    assert filecmp.cmp(os.path.join(info.directory, "orderbook.csv"), os.path.join(again.directory, "orderbook.csv"),
                       shallow=False)
    live, prices = {}, []
    with open(os.path.join(info.directory, "orderbook.csv")) as f:
        for ln in f:
            t, oid, a, vol, price = ln.strip().split(",")
            oid, vol = int(oid), int(vol)
            prices.append(float(price))
            if a in "BS":
                assert oid not in live
                live[oid] = vol
            elif a in "DF":
                assert oid in live and (a == "D" or vol == live[oid])
                del live[oid]
            elif a == "E":
                assert oid in live and 0 < vol < live[oid]
                live[oid] -= vol
    assert set(info.counts["ORDERBOOK"]) >= {"B", "S", "D", "E", "F"}
    assert len(set(prices)) > 50                      # the price moves
    es = load_event_stream(info.schema_sql())
    assert set(es.stream_names) == {"BIDS", "ASKS"}
    assert {row[2] for b in es.per_relation.values() for _, row in b.rows()} <= set(range(4))


def test_harness_end_to_end_is_checked_against_duckdb(tmp_path, data_dir):
    cfg = BenchConfig(queries=["tpch_q6", "tpch_q12", "fin_bsv"], backends=["interp", "calc"], batch_sizes=[1, 250],
                      scale=SCALE, seed=5, active_orders=ACTIVE[0], active_lineitems=ACTIVE[1], finance_events=2000,
                      time_limit=2.0, max_events=1000, out=str(tmp_path), data_dir=data_dir, progress=False,
                      duckdb_windows=2)
    results, info = run_benchmark(cfg, log=lambda s: None)
    assert set(info["datasets"]) == {"tpch", "finance"}
    by = {(r.query, r.backend, r.batch_size): r for r in results}
    for q in cfg.queries:
        for bs in cfg.batch_sizes:
            d = by[(q, "duckdb", bs)]
            assert d.status == "OK" and d.rate > 0
            for be in cfg.backends:
                r = by[(q, be, bs)]
                assert r.status == "OK", (q, be, bs, r.note)
                assert r.mode == ("tuple" if bs == 1 else "batch") or be == "calc"
                assert r.events > 0 and r.rate > 0 and r.ratio == pytest.approx(r.rate / d.rate)
                assert r.compile_s is not None
    from bench.report import full_report, markdown_table, write_csv
    write_csv(results, str(tmp_path / "r.csv"))
    md = markdown_table(results)
    assert "duckdb (baseline)" in md and "tpch_q12" in md and "×" in md
    assert "**WRONG**" not in md and "tpch_q6" in full_report(results, info)


class _DroppingEngine:
    """A wrong engine: a real engine that silently skips every 5th batch."""

    def __init__(self, inner):
        self.inner, self.n = inner, 0

    def apply(self, batch):
        self.n += 1
        if self.n % 5:
            self.inner.apply(batch)

    def results(self):
        return self.inner.results()

    def close(self):
        self.inner.close()


def test_harness_reports_a_wrong_engine_as_wrong(tpch, tpch_events):
    from toaster.pipeline import compile_sql
    query = harness.find_query("tpch_q14")
    text = tpch.schema_sql() + query.text
    rels, comp0 = harness.stream_relations(text)
    stream_rels = rels & set(tpch_events.stream_names)
    relations = list(comp0.m3.relations)
    expected = harness.ExpectedResults(tpch_events, relations, stream_rels, tuple(comp0.oracle_sql))
    batches = tpch_events.batches(40, stream_rels, 4000)
    tables = [b for b in tpch_events.tables if b.relation in {r.name for r in relations}]
    base = RunResult("tpch", "tpch_q14", "", "", "", 40, stream_events=4000)

    def wrong_factory(text, mode, strategy):
        comp = compile_sql(text, mode=mode)
        return comp, _DroppingEngine(comp.engine("interp"))

    ok = run_engine(text, "interp", "hoivm", "batch", batches, tables, expected, base, 30.0)
    bad = run_engine(text, "interp", "hoivm", "batch", batches, tables, expected, base, 30.0,
                     engine_factory=wrong_factory)
    assert ok.status == "OK" and ok.rate > 0
    assert bad.status == "WRONG" and bad.rate is None and "QUERY_1" in bad.note

    from bench.report import markdown_table
    assert "**WRONG**" in markdown_table([bad])


def test_unknown_strategy_is_unsupported_not_a_crash(tmp_path, data_dir):
    cfg = BenchConfig(queries=["fin_bsv"], backends=["interp"], strategies=["hoivm", "no-such-strategy"],
                      batch_sizes=[100], finance_events=500, time_limit=2.0, out=str(tmp_path), data_dir=data_dir,
                      progress=False, duckdb=False)
    results, _ = run_benchmark(cfg, log=lambda s: None)
    st = {r.strategy: r.status for r in results}
    assert st["hoivm"] == "OK" and st["no-such-strategy"] in ("UNSUPPORTED", "ERROR")


# ------------------------------------------------------------------------------ Spark SQL baseline
def test_baselines_flag_keeps_no_duckdb_as_an_alias():
    from bench.__main__ import config_from_args, parser
    cfg = config_from_args(parser().parse_args([]))
    assert cfg.duckdb and not cfg.sparksql
    cfg = config_from_args(parser().parse_args(["--baselines", "duckdb,sparksql", "--no-duckdb"]))
    assert not cfg.duckdb and cfg.sparksql
    with pytest.raises(ToasterError, match="unknown baseline"):
        config_from_args(parser().parse_args(["--baselines", "duckdb,postgres"]))


def test_spark_sql_dialect_swaps_quoted_identifiers_only():
    from bench.sparksql import spark_sql
    sql = 'SELECT "B"."X" AS "Y" FROM "BIDS" AS "B" WHERE "B"."S" = \'say "hi"\' AND "B"."D" < DATE \'1995-03-15\''
    assert spark_sql(sql) == ("SELECT `B`.`X` AS `Y` FROM `BIDS` AS `B` WHERE `B`.`S` = 'say \"hi\"' "
                              "AND `B`.`D` < DATE '1995-03-15'")


def test_sparksql_baseline_runs_checked_beside_duckdb(tmp_path, data_dir):
    """A tiny run of the CLI with both baselines: the order book deletes orders in every batch,
    so the Spark SQL baseline's final answer (checked against DuckDB) covers deletions."""
    import csv
    from bench.__main__ import main
    out = tmp_path / "out"
    code = main(["--queries", "fin_bsv", "--backends", "interp", "--batch-sizes", "1000", "--finance-events", "3000",
                 "--max-events", "3000", "--time-limit", "2", "--baselines", "duckdb,sparksql", "--out", str(out),
                 "--data-dir", data_dir, "--no-progress", "--master", "local[2]"])
    assert code == 0
    with open(out / "results.csv") as f:
        rows = {r["backend"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"interp", "duckdb", "sparksql"}
    for col in ("sparksql_rate", "sparksql_ratio", "spark_jobs", "spark_stages"):
        assert col in rows["interp"]
    s, d, t = rows["sparksql"], rows["duckdb"], rows["interp"]
    assert s["status"] == "OK" and int(s["events"]) > 0 and float(s["rate"]) > 0, s["note"]
    assert float(s["spark_jobs"]) >= 1 and float(s["spark_stages"]) >= 1
    assert d["status"] == "OK" and float(d["rate"]) > 0
    assert t["status"] == "OK" and float(t["sparksql_rate"]) == pytest.approx(float(s["rate"]), rel=1e-4)
    assert float(t["sparksql_ratio"]) == pytest.approx(float(t["rate"]) / float(s["rate"]), rel=1e-3)
    assert t["spark_jobs"] == "" and t["spark_stages"] == ""
    md = (out / "results.md").read_text()
    assert "sparksql (baseline)" in md and "sql ×" in md and "Spark jobs / batch" in md


def test_sparksql_baseline_that_ignores_deletions_is_wrong(monkeypatch, data_dir):
    from bench import sparksql
    info = generate_finance_stream(os.path.join(data_dir, "fin-sql"), events=2000, seed=3, brokers=4)
    es = load_event_stream(info.schema_sql())
    text = info.schema_sql() + harness.find_query("fin_bsv").text
    rels, comp0 = harness.stream_relations(text)
    stream_rels = rels & set(es.stream_names)
    relations = list(comp0.m3.relations)
    expected = harness.ExpectedResults(es, relations, stream_rels, tuple(comp0.oracle_sql))
    batches = es.batches(500, stream_rels, 1500)
    assert any(np.any(b.signs < 0) for g in batches for b in g)
    base = RunResult("finance", "fin_bsv", "", "", "", 500, stream_events=1500)
    args = (relations, tuple(comp0.oracle_sql), list(comp0.queries), batches, [], expected, base, 5.0, 2)
    ok = sparksql.run_sparksql(*args, master="local[2]")
    assert ok.status == "OK" and ok.rate > 0, ok.note
    real_apply = sparksql.SparkReplayer.apply

    def inserts_only(self, batch):
        keep = batch.signs > 0
        real_apply(self, type(batch)(batch.relation, batch.signs[keep], tuple(c[keep] for c in batch.columns)))
    monkeypatch.setattr(sparksql.SparkReplayer, "apply", inserts_only)
    bad = sparksql.run_sparksql(*args, master="local[2]")
    assert bad.status == "WRONG" and bad.rate is None and "QUERY_1" in bad.note


def test_ingest_mode_smoke(tmp_path, data_dir):
    """`python -m bench --ingest` on a tiny stream: a row per stream file and per projection, the
    line counts of toaster's reader equal to DuckDB's (checked inside), a table written."""
    from bench.__main__ import main
    out = tmp_path / "out"
    assert main(["--ingest", "--scale", str(SCALE), "--seed", "5", "--active-orders", str(ACTIVE[0]),
                 "--active-lineitems", str(ACTIVE[1]), "--data-dir", data_dir, "--out", str(out),
                 "--queries", "tpch_q6", "--repeats", "1"]) == 0
    table = (out / "ingest.md").read_text()
    for f in ("customer.csv", "orders.csv", "lineitem.csv"):
        assert f"| {f} | all (" in table
    assert "| lineitem.csv | tpch_q6 (4) |" in table and "load average" in table


def test_in_memory_mode_smoke(tmp_path, data_dir):
    """`python -m bench --in-memory` on tiny tables: a row per query with the relations fed in
    order, and the engine's views equal to DuckDB's over the same files."""
    from bench.__main__ import main
    from bench.end_to_end import write_csv_tables
    from bench.harness import find_query
    from bench.in_memory import load_relations, run_once
    from bench.tpch import generate_tables
    from toaster.pipeline import compile_sql
    from toaster.testing import Oracle, compare_results
    out = tmp_path / "out"
    assert main(["--in-memory", "--scale", str(SCALE), "--data-dir", data_dir, "--out", str(out),
                 "--queries", "tpch_q3,tpch_q6", "--repeats", "1"]) == 0
    table = (out / "in-memory.md").read_text()
    assert "| tpch_q3 | CUSTOMER → ORDERS → LINEITEM |" in table and "| tpch_q6 | LINEITEM |" in table
    # what it measures is a correct maintenance run
    tbl = generate_tables(os.path.join(data_dir, f"tbl-sf{SCALE:g}"), SCALE)
    schema = write_csv_tables(tbl, os.path.join(data_dir, f"e2e-csv-sf{SCALE:g}"))
    comp = compile_sql(schema + "\n" + find_query("tpch_q3").text, mode="tuple")
    probe = comp.engine("llvm")
    tables, streams = load_relations(comp, probe)
    probe.close()
    events, cpu, native, engine = run_once(comp, tables, streams)
    assert events == sum(len(b) for b in streams) > 0 and 0 <= native <= cpu
    oracle = Oracle(comp.m3.relations)
    full_tables, full_streams = load_relations(comp, comp.engine("interp"))
    for b in full_tables + full_streams:
        oracle.apply(b)
    q = comp.queries[0]
    assert compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns)) == []
    engine.close()


def test_end_to_end_mode_checks_answers(tmp_path, data_dir):
    """`python -m bench --end-to-end` on tiny tables: the toaster runs (cold, JIT cache warm, --opt-level 2)
    print DuckDB's answer, and a differing answer is caught."""
    import datetime
    from bench.__main__ import main
    from bench.end_to_end import same_answer
    out = tmp_path / "out"
    assert main(["--end-to-end", "--scale", str(SCALE), "--data-dir", data_dir, "--out", str(out),
                 "--queries", "tpch_q3", "--repeats", "1"]) == 0
    table = (out / "end-to-end.md").read_text()
    assert "| tpch_q3 |" in table and "= DuckDB" in table
    from bench.end_to_end import breakdown      # the cold run's CPU by step, on the file it ran
    steps = breakdown(str(out / "e2e-tpch_q3.sql"))
    assert list(steps) == ["passes", "imp_to_llvm", "llvm_ir_passes", "jit_other", "read", "maintain"]
    assert all(v >= 0 for v in steps.values()) and steps["llvm_ir_passes"] > 0
    csv = "K,D,V\n1,1995-01-05,2.5\n"
    assert same_answer(csv, [(1, datetime.date(1995, 1, 5), 2.5)]) is None
    assert "differs" in same_answer(csv, [(1, datetime.date(1995, 1, 5), 2.6)])
    assert "rows" in same_answer(csv, [])
