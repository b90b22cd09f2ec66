"""Batches given as Spark DataFrames (issue 10 item 4, docs/spark-engine.md "DataFrame batches
read by the executors"): SparkEngine.apply_frames runs a step whose relations with input blocks
are read, checked and pre-aggregated by the tasks of their DataFrames' partitions inside the
step's one job, never collected on the driver; the views equal DuckDB's after every step, and a
bad value fails the step with one InputError (file:line:column for CSV files) and no change."""
from __future__ import annotations

import datetime
import json

import pytest

from toaster.backends.spark import engine as spark_engine
from toaster.backends.spark import frame_input
from toaster.backends.spark.engine import SparkEngine, explain_jobs
from toaster.backends.spark.file_frames import csv_frame
from toaster.backends.spark.runtime import last_job_id
from toaster.errors import InputError
from toaster.pipeline import compile_sql
from toaster.testing import Oracle, compare_results

from test_spark_input import Q3, Q6, Q17, _stream

SPARK_TYPES = {"int": "long", "float": "double", "date": "date", "string": "string", "bool": "boolean"}


def _date(v: int) -> datetime.date:
    return datetime.date(v // 10000, v // 100 % 100, v % 100)


def _frame(spark, decl, rows, signs, parts=2):
    """A DataFrame of Python rows (the test's input; the engine never sees them as such; None is
    NULL) in `parts` partitions, dates as Spark dates, the signs in __toaster_sign."""
    logical = decl.logical_columns
    schema = ", ".join(f"{c.name} {SPARK_TYPES[c.type.value]}" for c in logical) + f", {frame_input.SIGN} int"
    data = [tuple(_date(v) if c.type.value == "date" and v is not None else v for c, v in zip(logical, row)) + (s,)
            for row, s in zip(rows, signs)]
    return spark.createDataFrame(spark.sparkContext.parallelize(data, parts), schema)


def _batch_frame(spark, decl, batch, parts=2):
    from toaster.runtime.nulls import logical_rows
    pairs = list(batch.rows())
    return _frame(spark, decl, logical_rows(decl, [r for _, r in pairs]), [s for s, _ in pairs], parts)


def _results(engine, comp):
    return {q.name: engine.result(q.name).rows for q in comp.queries}


def _run_frames(spark, sql, step, seed, n, monkeypatch, pass_options=None):
    """Random batches with deletions fed as DataFrames, `step` relations per apply_frames; the
    views equal DuckDB's after every step; the relations the executors read are never made into
    rows or collected on the driver, and each step is one Spark job (+ a job per collected
    relation, + the periodic snapshot)."""
    comp = compile_sql(sql, mode="batch", pass_options=pass_options)
    prog = comp.stage("spark")
    read, collected = frame_input.frame_relations(prog.native.inputs, prog.relations)
    engine = SparkEngine(prog, spark=spark, partitions=2, checkpoint_every=50)
    seen = []
    real_collect, real_net = frame_input.collect_batch, spark_engine.net_delta

    def collect_batch(decl, df, **kw):
        assert decl.name not in read, f"{decl.name} collected on the driver"
        seen.append(decl.name)
        return real_collect(decl, df, **kw)

    def net_delta(batch):
        assert batch.relation.upper() not in read, batch.relation
        return real_net(batch)
    monkeypatch.setattr(frame_input, "collect_batch", collect_batch)
    monkeypatch.setattr(spark_engine, "net_delta", net_delta)
    decls = {r.name: r for r in comp.m3.relations}
    oracle = Oracle(comp.m3.relations)
    batches = _stream(sql, seed, n)
    try:
        for i in range(0, len(batches), step):
            group = [b for b in batches[i:i + step] if len(b)]
            frames = [(b.relation, _batch_frame(spark, decls[b.relation.upper()], b)) for b in group]
            seen.clear()
            j0 = last_job_id(spark.sparkContext)
            engine.apply_frames(frames)
            jobs = last_job_id(spark.sparkContext) - j0
            for b in group:
                oracle.apply(b)
            for q, sql_q in zip(comp.queries, comp.oracle_sql):
                assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns)), i
            ran = any(b.relation.upper() in engine.program.TRIGGERS for b in group)
            assert jobs == ran + len(seen) and (not ran or engine.jobs_last_batch == 1), (i, jobs, seen)
        before = _results(engine, comp)      # empty DataFrames: their triggers run and change nothing
        engine.apply_frames({r: _frame(spark, decls[r], [], []) for r in read})
        assert _results(engine, comp) == before
    finally:
        engine.close()
        oracle.close()
    return prog, read, collected


def test_q3_shape_frames(spark, monkeypatch):
    """ORD and LI read by the executors; CUST's broadcast batch is collected (through Arrow)
    and pre-aggregated on the driver, as --explain says."""
    prog, read, collected = _run_frames(spark, Q3, 3, 21, 6, monkeypatch, {"m3_to_dist": {"broadcast": "CUST"}})
    assert (read, collected) == (["ORD", "LI"], ["CUST", "PART"])
    text = explain_jobs(prog)
    assert "DataFrame batches (apply_frames, --stream-dir, --spark-input executors) read, checked and " \
           "pre-aggregated by the executors in stage 0 (no column on the driver): ORD, LI" in text
    assert "DataFrame batches collected to the driver through Arrow first (a Spark job each; their " \
           "first block is not run by the executors): CUST" in text


def test_q6_shape_frames(spark, monkeypatch):
    _, read, _ = _run_frames(spark, Q6, 1, 22, 4, monkeypatch)
    assert "LI" in read


def test_q17_shape_frames(spark, monkeypatch):
    _, read, _ = _run_frames(spark, Q17, 2, 23, 6, monkeypatch)
    assert {"LI", "PART"} <= set(read)


NULLABLE = """CREATE STREAM R(K int, B int NULL, S string NULL, D date NULL);
CREATE STREAM T(K int, C float);
SELECT R.B, R.S, SUM(T.C) AS SC, COUNT(*) AS N FROM R, T WHERE R.K = T.K GROUP BY R.B, R.S;
SELECT R.D, COUNT(*) AS N FROM R, T WHERE R.K = T.K GROUP BY R.D;"""


def test_nullable_columns_get_their_null_flags_in_the_tasks(spark, monkeypatch):
    """R's nullable columns: the tasks make each one's value and null flag (R's input block
    runs natively there); equal to DuckDB after every step."""
    _, read, _ = _run_frames(spark, NULLABLE, 2, 24, 4, monkeypatch)
    assert read == ["R", "T"]
    flags = [b.columns[2] for b in _stream(NULLABLE, 24, 4) if b.relation.upper() == "R"]     # B__NULL
    assert any(f.any() for f in flags), "no NULL was fed"


def _q6(spark, tmp_path=None):
    comp = compile_sql(Q6, mode="batch", base_dir=str(tmp_path) if tmp_path else None)
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    return comp, engine, next(r for r in comp.m3.relations if r.name == "LI")


LI_ROWS = [(i, i % 3, float(i % 4), 10.0 + i, 0.25, 19940101 + i % 20, f"n{i % 2}") for i in range(1, 13)]


def test_a_bad_value_in_one_partition_fails_the_step_and_changes_nothing(spark):
    """A NaN in the second partition, then a null: the task's check fails the whole step (one
    InputError naming relation and column), the views are those before it, and the engine goes
    on applying good steps."""
    comp, engine, li = _q6(spark)
    try:
        engine.apply_frames({"LI": _frame(spark, li, LI_ROWS[:6], [1] * 6)})
        before = _results(engine, comp)
        nan = list(LI_ROWS[6:])
        nan[4] = nan[4][:2] + (float("nan"),) + nan[4][3:]
        with pytest.raises(InputError, match=r"LI\.QTY: nan: NaN is not supported as an input value"):
            engine.apply_frames({"LI": _frame(spark, li, LI_ROWS[:3] + nan, [1] * 9, parts=3)})
        assert _results(engine, comp) == before
        null = [r[:3] + (None,) + r[4:] if k == 5 else r for k, r in enumerate(LI_ROWS[6:])]
        with pytest.raises(InputError, match="LI: null value for column PRICE"):
            engine.apply_frames({"LI": _frame(spark, li, null, [1] * 6)})
        assert _results(engine, comp) == before
        engine.apply_frames({"LI": _frame(spark, li, LI_ROWS[6:], [1] * 6)})
        oracle = Oracle(comp.m3.relations)
        from toaster.runtime.batch import Batch
        oracle.apply(Batch.from_rows("LI", li.types, LI_ROWS, [1] * len(LI_ROWS)))
        q = comp.queries[0]
        assert not compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns))
        oracle.close()
    finally:
        engine.close()


def test_a_schema_that_does_not_fit_is_refused_before_any_job(spark):
    comp, engine, li = _q6(spark)
    try:
        df = _frame(spark, li, LI_ROWS[:2], [1, 1])
        j0 = last_job_id(spark.sparkContext)
        with pytest.raises(InputError, match="LI: the DataFrame has no column NOTE"):
            engine.apply_frames({"LI": df.drop("NOTE")})
        with pytest.raises(InputError, match="LI.QTY: expected float values, got a Spark string column"):
            engine.apply_frames({"LI": df.withColumn("QTY", df["NOTE"])})
        assert last_job_id(spark.sparkContext) == j0
    finally:
        engine.close()


def _lines(n, sep=","):
    return [sep.join((str(i), str(i % 3), f"{i % 4}.0", f"{i}.5", f"0.{i % 7}", f"1994-0{1 + i % 9}-11", f"note {i % 5}"))
            for i in range(1, n + 1)]


def test_csv_files_read_by_the_executors_report_file_line_column(spark, tmp_path):
    """A CSV file read by Spark (csv_frame) in several splits: the views equal DuckDB over the same
    file read by toaster's own reader; a malformed field the query reads, or a line with too few
    or too many fields, in a later split fails the step with the error toaster's line parser
    gives for it (file:line:column), no view changed."""
    from toaster.runtime.csv_source import parse_csv_lines, read_source
    comp, engine, li = _q6(spark, tmp_path)
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1024")       # several splits per file
    try:
        good = _lines(60)
        (tmp_path / "l.csv").write_text("\n".join(good[:30]) + "\n\n" + "\n".join(good[30:]) + "\n")
        engine.apply_frames({"LI": csv_frame(spark, tmp_path / "l.csv")}, empty_strings=True)
        oracle = Oracle(comp.m3.relations)
        for b in read_source(li, base_dir=str(tmp_path)):
            oracle.apply(b)
        q = comp.queries[0]
        assert not compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns))
        oracle.close()
        before = _results(engine, comp)
        # few cases: a failed task ends its Python worker, and the next one loads the program again
        for k, bad in ((47, "47,2,x,1.5,0.1,1994-01-11,n"), (35, "35,2,3.0,1.5,0.1")):
            lines = good[:k - 1] + [bad] + good[k:]
            path = tmp_path / "m.csv"
            path.write_text("\n".join(lines) + "\n")
            with pytest.raises(InputError) as reader:
                list(parse_csv_lines(li, lines, path=str(path)))
            with pytest.raises(InputError) as got:
                engine.apply_frames({"LI": csv_frame(spark, path)}, empty_strings=True)
            assert str(got.value) == str(reader.value) and f"m.csv:{k}:" in str(got.value)
            assert _results(engine, comp) == before
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
        engine.close()


def test_cli_spark_input_executors_equals_the_interpreter(spark, tmp_path, capsys):
    """`--run --backend spark --spark-input executors` over files with deletions, without
    --batch-size: one step (byte ranges read by the tasks), the views those of the reference
    interpreter over the same files (steps: test_spark_executor_input.py)."""
    from toaster.cli import main
    lines = [f"{i}|1|{line}" for i, line in enumerate(_lines(30, "|"), start=1)]
    lines += [f"{31 + k}|0|{line}" for k, line in enumerate(_lines(30, "|")[:9])]
    (tmp_path / "l.csv").write_text("\n".join(lines) + "\n")
    sql = Q6.replace("FROM FILE 'l.csv' LINE DELIMITED csv",
                     f"FROM FILE '{tmp_path}/l.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true')")
    (tmp_path / "q.sql").write_text(sql)
    assert main([str(tmp_path / "q.sql"), "--run", "--backend", "interp", "--output", "json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert main([str(tmp_path / "q.sql"), "--run", "--backend", "spark", "--spark-input", "executors",
                 "--output", "json"]) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    assert [(r["name"], len(r["rows"])) for r in got] == [(r["name"], len(r["rows"])) for r in want]
    for g, w in zip(got, want):
        for grow, wrow in zip(g["rows"], w["rows"]):
            assert grow == pytest.approx(wrow, rel=1e-9)
    assert "39 events in 1 batches" in out.err        # no --batch-size: the whole file, one step
    assert main([str(tmp_path / "q.sql"), "--run", "--backend", "spark", "--spark-input", "executors",
                 "--checkpoint-dir", str(tmp_path / "st"), "--stream-dir", f"LI={tmp_path}"]) == 2
    assert "--spark-input executors does not take --stream-dir" in capsys.readouterr().err


def test_q3_shape_csv_files_one_step(spark, tmp_path):
    """Three CSV sources as one step of csv_frame DataFrames: ORD and LI parsed and
    pre-aggregated in the tasks, CUST (broadcast) collected and parsed on the driver by the same
    reader; the views equal DuckDB over the files read by toaster's own reader."""
    from toaster.runtime.csv_source import read_source
    comp = compile_sql(Q3, mode="batch", base_dir=str(tmp_path), pass_options={"m3_to_dist": {"broadcast": "CUST"}})
    decls = {r.name: r for r in comp.m3.relations}
    files = {"CUST": "c.csv", "ORD": "o.csv", "LI": "l.csv"}
    for rel, path in files.items():
        rows = [r for b in _stream(Q3, 31, 12) if b.relation.upper() == rel for s, r in b.rows() if s > 0]
        text = [",".join(f"{v // 10000:04d}-{v // 100 % 100:02d}-{v % 100:02d}" if c.type.value == "date" else str(v)
                         for c, v in zip(decls[rel].columns, row)) for row in rows]
        (tmp_path / path).write_text("\n".join(text) + "\n")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    oracle = Oracle(comp.m3.relations)
    try:
        engine.apply_frames({r: csv_frame(spark, tmp_path / p) for r, p in files.items()})
        assert engine.jobs_last_batch == 1
        for rel in files:
            for b in read_source(decls[rel], base_dir=str(tmp_path)):
                oracle.apply(b)
        for q, sql_q in zip(comp.queries, comp.oracle_sql):
            assert not compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns))
    finally:
        engine.close()
        oracle.close()
