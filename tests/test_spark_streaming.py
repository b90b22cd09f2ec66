"""Structured Streaming input (issue 10 item 8): toaster.backends.spark.streaming.maintain over
directories of CSV files (inserts and deletions, `seq|op|...` lines), one file per relation per
micro-batch; the views equal DuckDB's (over the same files, read by toaster's own CSV reader)
after every micro-batch; restarts with the same locations after a crash on either side of
Spark's commit apply every micro-batch exactly once; locations that disagree are refused."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toaster.backends.spark.engine import SparkEngine
from toaster.backends.spark.streaming import StreamStateError, maintain
from toaster.checkpoint import latest_checkpoint
from toaster.errors import InputError, UnsupportedError
from toaster.pipeline import compile_sql
from toaster.runtime.csv_source import parse_csv_lines
from toaster.runtime.output import format_results

from test_checkpoint import SQL, assert_matches_duckdb, write_inputs

FILES = 4        # per relation
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def comp():
    return compile_sql(SQL, mode="batch")


def _split_inputs(tmp_path: Path) -> dict:
    """r.csv and s.csv (inserts and deletions of present rows) cut into FILES pieces each, kept
    aside in tmp_path/pieces; returns {relation: [piece paths]} in stream order."""
    write_inputs(tmp_path, 7, n_r=24, n_s=12)
    pieces = {}
    for rel in ("R", "S"):
        lines = (tmp_path / f"{rel.lower()}.csv").read_text().splitlines(keepends=True)
        step = -(-len(lines) // FILES)
        out = tmp_path / "pieces" / rel.lower()
        out.mkdir(parents=True)
        pieces[rel] = []
        for i in range(FILES):
            p = out / f"{rel.lower()}-{i}.csv"
            p.write_text("".join(lines[i * step:(i + 1) * step]))
            pieces[rel].append(p)
    return pieces


def _arrive(pieces: dict, dirs: dict, upto: int) -> None:
    """Files 0..upto-1 of every relation present in its input directory, oldest first (Spark's
    file source takes them by modification time)."""
    for rel, files in pieces.items():
        for i, f in enumerate(files[:upto]):
            target = dirs[rel] / f.name
            if not target.exists():
                shutil.copy(f, target)
                os.utime(target, (1_000_000 + i, 1_000_000 + i))


def _reference_batches(decls: dict, pieces: dict, upto: int) -> list:
    """The first `upto` files of every relation, read by toaster's CSV reader (not Spark's)."""
    return [b for rel, files in pieces.items() for f in files[:upto]
            for b in parse_csv_lines(decls[rel], f.read_text().splitlines(), path=str(f))]


def _run(comp, spark, dirs, ckpt, **kw):
    """One availableNow run of the maintenance query, a file per relation per micro-batch; the
    views are compared with DuckDB after every micro-batch (in the callback: a failure there
    fails the query)."""
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    seen = []

    def check(eng, batch_id, batches):
        seen.append(batch_id)
        assert assert_matches_duckdb(comp, eng, _reference_batches(eng.relations, kw["pieces"], batch_id + 1)) > 0

    stream = maintain(engine, spark, {rel: str(d) for rel, d in dirs.items()}, str(ckpt),
                      trigger={"availableNow": True}, max_files_per_trigger=1, on_batch=check)
    try:
        stream.awaitTermination(240)
        assert not stream.query.isActive, "the availableNow query did not finish in 240 s"
        assert stream.query.exception() is None, stream.query.exception()
    finally:
        stream.stop()
        engine.close()
    assert seen == stream.applied
    return stream


def test_micro_batches_equal_duckdb_and_restarts_are_exactly_once(comp, spark, tmp_path):
    pieces = _split_inputs(tmp_path)
    assert any(line.split("|")[1] == "0" for f in pieces["R"] for line in f.read_text().splitlines())
    dirs = {rel: tmp_path / "in" / rel.lower() for rel in pieces}
    for d in dirs.values():
        d.mkdir(parents=True)
    ckpt = tmp_path / "ckpt"
    state = ckpt / "toaster"

    _arrive(pieces, dirs, 2)
    first = _run(comp, spark, dirs, ckpt, pieces=pieces)
    assert (first.applied, first.skipped) == ([0, 1], [])

    # crash after toaster's checkpoint of micro-batch 1, before Spark committed it: Spark runs
    # micro-batch 1 again (same files), toaster skips it
    for name in ("1", ".1.crc"):
        (ckpt / "commits" / name).unlink(missing_ok=True)
    _arrive(pieces, dirs, 3)
    second = _run(comp, spark, dirs, ckpt, pieces=pieces)
    assert (second.skipped, second.applied) == ([1], [2])

    # crash after micro-batch 3 was applied but before its toaster checkpoint was written:
    # restored at 2, Spark runs 3 again, applied once
    _arrive(pieces, dirs, 4)
    third = _run(comp, spark, dirs, ckpt, pieces=pieces)
    assert third.applied == [3]
    shutil.rmtree(latest_checkpoint(state))
    for name in ("3", ".3.crc"):
        (ckpt / "commits" / name).unlink(missing_ok=True)
    fourth = _run(comp, spark, dirs, ckpt, pieces=pieces)
    assert (fourth.skipped, fourth.applied) == ([], [3])

    # the toaster state gone while Spark's checkpoint remains: refused, nothing started
    shutil.rmtree(state)
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    try:
        with pytest.raises(StreamStateError, match="committed micro-batch 3"):
            maintain(engine, spark, {rel: str(d) for rel, d in dirs.items()}, str(ckpt))
        assert not spark.streams.active
    finally:
        engine.close()


def test_bad_operation_fails_the_micro_batch(comp, spark, tmp_path):
    for rel in ("r", "s"):
        (tmp_path / rel).mkdir()
    (tmp_path / "r" / "r-0.csv").write_text("1|1|3|a|1995-01-01\n2|7|4|b|1995-01-02\n")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2)
    stream = maintain(engine, spark, {"R": str(tmp_path / "r"), "S": str(tmp_path / "s")},
                      str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        with pytest.raises(InputError, match=r"R: bad operation '7' \(expected 1 = insert, 0 = delete\) "
                                             r"in file:.*/r-0\.csv"):
            stream.awaitTermination(240)       # the toaster error, not Spark's wrapper
        assert stream.query.exception() is not None
        assert stream.applied == [] and latest_checkpoint(tmp_path / "ckpt" / "toaster") is None
    finally:
        stream.stop()
        engine.close()


def test_cli_stream_dirs_resume_from_the_checkpoint_dir(tmp_path):
    pieces = _split_inputs(tmp_path)
    dirs = {rel: tmp_path / "in" / rel.lower() for rel in pieces}
    for d in dirs.values():
        d.mkdir(parents=True)
    args = [sys.executable, "-m", "toaster.pipeline", str(tmp_path / "q.sql"), "--run", "--backend", "spark",
            "--master", "local[2]", "--stream-dir", f"R={dirs['R']}", "--stream-dir", f"S={dirs['S']}",
            "--checkpoint-dir", str(tmp_path / "ckpt"), "--stream-once", "--stream-max-files", "1",
            "--output", "json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for upto, applied in ((2, 2), (FILES, FILES - 2)):      # then a restart that sees two more files
        _arrive(pieces, dirs, upto)
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"micro-batches applied {applied}, already applied before a restart 0" in done.stderr
        engine = compile_sql(SQL).engine("interp")
        for b in _reference_batches(engine.relations, pieces, upto):
            engine.apply(b)
        assert json.loads(done.stdout) == json.loads(format_results(engine.results(), "json"))
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir() if not p.name.startswith(".")) == \
        ["commits", "metadata", "offsets", "sources", "toaster"], "the engine's delta log is removed"


def test_arrow_micro_batch_to_toaster_batches_without_spark(comp):
    """A micro-batch as Spark's toArrow gives it (large strings, dates, empty strings as null)
    becomes one Batch per relation, in declaration order, with Arrow columns and signs."""
    import datetime
    import pyarrow as pa
    from toaster.backends.spark.streaming import (FILE_COLUMN, OP_COLUMN, RELATION_COLUMN, SEQ_COLUMN,
                                                  arrow_batches)
    decls = compile_sql(SQL).engine("interp").relations
    d = datetime.date(1995, 1, 2)
    table = pa.table({RELATION_COLUMN: ["S", "R", "R", "R"], FILE_COLUMN: ["f:s", "f:r", "f:r", "f:r"],
                      SEQ_COLUMN: [1, 2, 3, 4], OP_COLUMN: ["1", "1", "1", "0"],
                      "R__A": [None, 3, 4, 3], "R__B": pa.array([None, None, "x", None], pa.large_string()),
                      "R__C": pa.array([None, d, d, d], pa.date32()),
                      "S__B": pa.array(["y", None, None, None], pa.large_string()),
                      "S__D": [1.5, None, None, None]})
    r, s = arrow_batches(table, decls, ["R", "S"])
    assert (r.relation, list(r.signs), s.relation, list(s.signs)) == ("R", [1, 1, -1], "S", [1])
    assert [c.to_pylist() for c in r.columns] == [[3, 4, 3], ["", "x", ""], [d, d, d]]
    assert all(isinstance(c, pa.Array) for c in r.columns + s.columns), "columnar, no row loop"
    engine = compile_sql(SQL).engine("interp")
    engine.apply_many([r, s])
    same_lines = [*parse_csv_lines(decls["R"], ["2|1|3||1995-01-02", "3|1|4|x|1995-01-02", "4|0|3||1995-01-02"]),
                  *parse_csv_lines(decls["S"], ["1|1|y|1.5"])]
    assert assert_matches_duckdb(comp, engine, same_lines) > 0
    bad = table.set_column(4, "R__A", pa.array([None, None, 4, 3], pa.int64()))
    with pytest.raises(InputError, match="R: empty field for column A in f:r"):
        arrow_batches(bad, decls, ["R", "S"])


def test_refusals_before_any_spark_work(tmp_path):
    """Checked before the query starts (no Spark needed): an engine that already holds stream
    updates with no toaster checkpoint, a stream without a directory, a TABLE given a directory."""
    engine = compile_sql(SQL).engine("interp")
    decls = engine.relations
    for b in parse_csv_lines(decls["R"], ["1|1|3|a|1995-01-01"]):
        engine.apply(b)
    with pytest.raises(StreamStateError, match="already holds stream updates"):
        maintain(engine, None, {"R": str(tmp_path), "S": str(tmp_path)}, str(tmp_path / "ckpt"))
    with pytest.raises(UnsupportedError, match="without a directory for stream S"):
        maintain(compile_sql(SQL).engine("interp"), None, {"R": str(tmp_path)}, str(tmp_path / "ckpt"))
    tables = compile_sql("CREATE TABLE T(A int) FROM FILE 't.csv' LINE DELIMITED CSV; "
                         "CREATE STREAM R(A int) FROM FILE 'r.csv' LINE DELIMITED CSV; "
                         "SELECT SUM(R.A) FROM R, T WHERE R.A = T.A;").engine("interp")
    with pytest.raises(UnsupportedError, match="TABLE T"):
        maintain(tables, None, {"R": str(tmp_path), "T": str(tmp_path)}, str(tmp_path / "ckpt"))
