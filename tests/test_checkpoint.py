"""Durable state: Engine.checkpoint/restore (every engine, across engines, refusals, torn writes)
and the CLI's --checkpoint-dir/--resume surviving SIGKILL at random points, checked against DuckDB."""
from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from toaster.checkpoint import CheckpointError, latest_checkpoint, read_manifest
from toaster.pipeline import compile_sql, main
from toaster.runtime.csv_source import load_sources
from toaster.runtime.output import format_results
from toaster.testing.generator import random_stream
from toaster.testing.oracle import Oracle, compare_results, format_differences

ROOT = Path(__file__).resolve().parent.parent

SQL = """
CREATE STREAM R(A int, B string, C date) FROM FILE 'r.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true');
CREATE STREAM S(B string, D float) FROM FILE 's.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true');
SELECT R.B, SUM(R.A * S.D), COUNT(*) FROM R, S WHERE R.B = S.B GROUP BY R.B;
SELECT C, MAX(A), COUNT(*) FROM R GROUP BY C;
SELECT SUM(A) FROM R;
"""


def assert_matches_duckdb(comp, engine, batches) -> int:
    """Every result of `engine` equals DuckDB's over `batches`; returns the rows compared."""
    oracle = Oracle(list(engine.relations.values()))
    try:
        for b in batches:
            oracle.apply(b)
        results = {r.name: r for r in engine.results()}
        compared = 0
        for q, sql in zip(comp.queries, comp.oracle_sql):
            expected = oracle.query(sql)
            compared += len(expected)
            diffs = compare_results(results[q.name], expected, len(q.key_columns))
            assert not diffs, format_differences(q.name, results[q.name].columns, len(q.key_columns),
                                                 diffs, results[q.name].types)
        return compared
    finally:
        oracle.close()


@pytest.fixture(scope="module")
def comp():
    return compile_sql(SQL)


@pytest.fixture(scope="module")
def stream(comp):
    relations = list(comp.engine("interp").relations.values())
    return random_stream(relations, seed=7, n_batches=24, deletes=True)


# ------------------------------------------------------------------ the API
@pytest.mark.parametrize("backend", ["interp", "imp", "llvm", "calc"])
def test_round_trip_then_continue(comp, stream, backend, tmp_path):
    first, rest = stream[:14], stream[14:]
    src = comp.engine(backend)
    for b in first:
        src.apply(b)
    src.checkpoint(tmp_path / "c", position={"batches": 14})
    src.close()
    dst = comp.engine(backend)
    assert dst.restore(tmp_path / "c") == {"batches": 14}
    assert assert_matches_duckdb(comp, dst, first) > 0
    for b in rest:                       # the restored state keeps working (indexes, strings)
        dst.apply(b)
    assert assert_matches_duckdb(comp, dst, stream) > 0
    dst.close()


@pytest.mark.parametrize("writer,reader", [("interp", "llvm"), ("llvm", "interp"), ("llvm", "imp"),
                                           ("imp", "llvm"), ("interp", "imp")])
def test_cross_engine_restore(comp, stream, writer, reader, tmp_path):
    first, rest = stream[:10], stream[10:]
    src = comp.engine(writer)
    for b in first:
        src.apply(b)
    src.checkpoint(tmp_path / "c")
    dst = comp.engine(reader)
    dst.restore(tmp_path / "c")
    assert dst.results() == src.results()
    for b in rest:
        dst.apply(b)
    assert_matches_duckdb(comp, dst, stream)
    src.close()
    dst.close()


def test_batch_mode_engine_restores_a_tuple_mode_checkpoint(comp, stream, tmp_path):
    src = comp.engine("llvm")
    for b in stream:
        src.apply(b)
    src.checkpoint(tmp_path / "c")
    dst = compile_sql(SQL, mode="batch").engine("interp")
    dst.restore(tmp_path / "c")
    assert_matches_duckdb(comp, dst, stream)


def test_restore_into_another_program_is_refused(comp, stream, tmp_path):
    src = comp.engine("interp")
    for b in stream[:5]:
        src.apply(b)
    src.checkpoint(tmp_path / "c")
    other = compile_sql(SQL.replace("MAX(A)", "MIN(A)")).engine("llvm")
    before = other.results()
    with pytest.raises(CheckpointError, match=r"another program: .*MIN_AGGREGATE"):
        other.restore(tmp_path / "c")
    assert other.results() == before
    retyped = compile_sql(SQL.replace("D float", "D int")).engine("interp")
    with pytest.raises(CheckpointError, match=r"relation S differs"):
        retyped.restore(tmp_path / "c")


def test_calc_keeps_relations_and_refuses_map_checkpoints(comp, stream, tmp_path):
    calc, interp = comp.engine("calc"), comp.engine("interp")
    for b in stream[:6]:
        calc.apply(b)
        interp.apply(b)
    calc.checkpoint(tmp_path / "calc")
    interp.checkpoint(tmp_path / "interp")
    assert read_manifest(tmp_path / "calc")["state"] == "relations"
    with pytest.raises(CheckpointError, match="calc backend, which keeps relations"):
        comp.engine("llvm").restore(tmp_path / "calc")
    with pytest.raises(CheckpointError, match="the calc backend keeps relations"):
        comp.engine("calc").restore(tmp_path / "interp")


def test_manifest_and_parquet_types(comp, stream, tmp_path):
    import pyarrow.parquet as pq
    e = comp.engine("llvm")
    for b in stream:
        e.apply(b)
    e.checkpoint(tmp_path / "c", position={"k": 1})
    m = read_manifest(tmp_path / "c")
    assert (m["format"], m["format_version"], m["backend"], m["position"]) == \
        ("toaster-checkpoint", 1, "llvm", {"k": 1})
    by_keys = {tuple(t["key_types"]): t for t in m["tables"]}
    date_table = pq.read_table(tmp_path / "c" / by_keys[("date", "int")]["file"])
    assert str(date_table.schema.field("key_0").type) == "date32[day]"
    string_table = pq.read_table(tmp_path / "c" / by_keys[("string",)]["file"])
    assert str(string_table.schema.field("key_0").type) == "string"
    assert sum(t["rows"] for t in m["tables"]) > 0


def test_torn_checkpoint_is_ignored(comp, stream, tmp_path, monkeypatch):
    import pyarrow.parquet as pq
    e = comp.engine("interp")
    for b in stream[:5]:
        e.apply(b)
    e.checkpoint(tmp_path / "ckpt-000000005", position={"batches": 5})
    for b in stream[5:8]:
        e.apply(b)
    calls = [0]
    real_write = pq.write_table

    def dies_midway(table, where, **kw):       # the process "dies" after the first table
        calls[0] += 1
        if calls[0] > 1:
            raise KeyboardInterrupt
        real_write(table, where, **kw)
    monkeypatch.setattr(pq, "write_table", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        e.checkpoint(tmp_path / "ckpt-000000008", position={"batches": 8})
    monkeypatch.undo()
    assert not (tmp_path / "ckpt-000000008").exists()
    assert any(".tmp-" in p.name for p in tmp_path.iterdir()), "the torn write left its temp directory"
    (tmp_path / "ckpt-000000009").mkdir()            # a directory without a manifest: not complete
    newest = latest_checkpoint(tmp_path)
    assert newest == str(tmp_path / "ckpt-000000005")
    fresh = comp.engine("llvm")
    assert fresh.restore(newest) == {"batches": 5}
    assert_matches_duckdb(comp, fresh, stream[:5])
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        fresh.restore(tmp_path / "ckpt-000000009")


# ------------------------------------------------------------------ the CLI, killed and resumed
def write_inputs(directory: Path, seed: int, n_r: int = 30, n_s: int = 12) -> None:
    """r.csv and s.csv with inserts and deletions of rows present at the time."""
    rng = random.Random(seed)
    dates = ["1995-01-01", "1995-01-02", "1996-02-29"]

    def lines(n, make):
        held, out = Counter(), []
        for seq in range(1, n + 1):
            if held and rng.random() < 0.35:
                row = rng.choice(sorted(held))
                held[row] -= 1
                held += Counter()
                out.append(f"{seq}|0|{'|'.join(row)}")
            else:
                row = make()
                held[row] += 1
                out.append(f"{seq}|1|{'|'.join(row)}")
        return "\n".join(out) + "\n"
    (directory / "r.csv").write_text(lines(n_r, lambda: (str(rng.randint(-3, 9)), rng.choice("abc"),
                                                         rng.choice(dates))))
    (directory / "s.csv").write_text(lines(n_s, lambda: (rng.choice("abcd"), rng.choice(["0.5", "1.5", "2.0"]))))
    (directory / "q.sql").write_text(SQL)


def _cli(directory: Path, backend: str, *extra) -> list:
    return [sys.executable, "-m", "toaster.pipeline", str(directory / "q.sql"), "--run", "--backend", backend,
            "--checkpoint-dir", str(directory / "state"), "--checkpoint-every", "1", "--batch-size", "3",
            "--output", "json", "--base-dir", str(directory), *extra]


def _newest_position(state: Path) -> int:
    newest = latest_checkpoint(state)
    return -1 if newest is None else int(Path(newest).name.split("-")[1])


@pytest.mark.parametrize("backend,seed", [("interp", 1), ("interp", 2), ("llvm", 3), ("llvm", 4)])
def test_sigkill_and_resume_equals_duckdb(backend, seed, tmp_path):
    write_inputs(tmp_path, seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(seed)
    # 30 lines of r.csv and 12 of s.csv in sequence order, windows of 3 events, a Batch per
    # relation in each window
    comp = compile_sql(SQL)
    relations = list(comp.engine(backend).relations.values())
    tables, streams = load_sources(relations, batch_size=3, base_dir=str(tmp_path))
    total_batches = len(tables) + len(streams)
    assert total_batches >= 14
    kills = resumed = 0
    out = None
    for attempt in range(12):
        args = _cli(tmp_path, backend, *(["--resume"] if attempt else []))
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # kill once a random later checkpoint exists, a random few milliseconds after it
        # (so some kills land mid-batch, some mid-checkpoint-write)
        done = _newest_position(tmp_path / "state")
        target = rng.randint(done + 1, total_batches) if attempt < 3 and done < total_batches else None
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if target is not None and _newest_position(tmp_path / "state") >= target:
                time.sleep(rng.random() * 0.02)
                proc.send_signal(signal.SIGKILL)
                kills += 1
                break
            time.sleep(0.002)
        stdout, stderr = proc.communicate(timeout=120)
        resumed += "resumed from" in stderr
        if proc.returncode == 0:
            out = stdout
            break
        assert proc.returncode == -signal.SIGKILL, stderr
    assert out is not None, "the run never completed"
    assert kills >= 1 and resumed >= 1, (kills, resumed)
    # the printed views are the final engine state, and it equals DuckDB on the whole input
    engine = comp.engine(backend)
    final = latest_checkpoint(tmp_path / "state")
    assert engine.restore(final)["batches"] == total_batches
    assert json.loads(out) == json.loads(format_results(engine.results(), "json"))
    assert assert_matches_duckdb(comp, engine, list(tables) + list(streams)) > 0
    engine.close()


def test_run_applies_a_window_as_one_step_and_resumes_inside_one(tmp_path, capsys, monkeypatch):
    """--run applies each window of the sequence-ordered streams (a Batch per relation) as one
    step (Engine.apply_many), checkpoints only between steps, and resumes from a checkpoint
    written inside a window (by a version that applied its batches one by one) with the rest of
    that window: the views equal an uninterrupted run's."""
    from toaster.checkpoint import InputPosition, checkpoint_name
    from toaster.engine import Engine
    from toaster.runtime.csv_source import open_sources
    write_inputs(tmp_path, 9)
    base = _cli(tmp_path, "interp")[3:]
    steps = []
    original = Engine.apply_many
    monkeypatch.setattr(Engine, "apply_many",
                        lambda self, batches: (steps.append(len(batches)), original(self, batches))[1])
    assert main(base) == 0
    whole = json.loads(capsys.readouterr().out)
    assert steps and max(steps) == 2         # windows touching both R and S: one step each
    written = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "state").iterdir())
    comp = compile_sql(SQL)
    engine = comp.engine("interp")
    relations = list(engine.relations.values())
    stream = list(open_sources(relations, 3, str(tmp_path), steps=True)[1])
    ends = list(itertools.accumulate(len(s) for s in stream))
    assert set(written) <= set(ends)
    # a checkpoint inside the first two-relation window
    k = next(i for i, s in enumerate(stream) if len(s) == 2)
    position = InputPosition(3, {r.name: r.source.path for r in relations})
    for step in stream[:k]:
        for b in step:
            engine.apply(b)
            position.advance(b)
    engine.apply(stream[k][0])
    position.advance(stream[k][0])
    shutil.rmtree(tmp_path / "state")
    engine.checkpoint(str(tmp_path / "state" / checkpoint_name(position.batches)), position.to_json())
    engine.close()
    assert main(base + ["--resume"]) == 0
    assert json.loads(capsys.readouterr().out) == whole


def test_resume_refuses_changed_input_and_batch_size(tmp_path, capsys):
    write_inputs(tmp_path, 5)
    base = _cli(tmp_path, "interp")[3:]
    assert main(base) == 0
    capsys.readouterr()
    assert main(base + ["--resume"]) == 0          # nothing left: the same views again
    assert "resumed from" in capsys.readouterr().err
    i = base.index("--batch-size")
    assert main(base[:i + 1] + ["2"] + base[i + 2:] + ["--resume"]) == 2
    assert "--batch-size 3" in capsys.readouterr().err
    lines = (tmp_path / "r.csv").read_text().splitlines()
    (tmp_path / "r.csv").write_text("\n".join(lines[:5]) + "\n")
    assert main(base + ["--resume"]) == 2
    assert "the input" in capsys.readouterr().err


@pytest.mark.parametrize("flags,message", [
    (["--resume"], "--resume needs --checkpoint-dir"),
    (["--checkpoint-every", "2"], "--checkpoint-every needs --checkpoint-dir"),
    (["--checkpoint-dir", "D", "--checkpoint-every", "0", "--run"], "at least 1"),
    (["--checkpoint-dir", "D"], "--checkpoint-dir needs --run"),
])
def test_checkpoint_flag_errors(tmp_path, capsys, flags, message):
    write_inputs(tmp_path, 6)
    assert main([str(tmp_path / "q.sql"), *flags]) == 2
    assert message in capsys.readouterr().err


def test_float_keys_and_scalar_maps_cross_to_llvm(tmp_path):
    sql = "CREATE STREAM S(B string, D float); SELECT D, COUNT(*), SUM(D) FROM S GROUP BY D; SELECT SUM(D) FROM S;"
    comp = compile_sql(sql)
    src = comp.engine("interp")
    rows = [("a", 0.0), ("b", -0.0), ("c", 2.5), ("d", -1.25), ("e", 2.5)]
    for r in rows:
        src.insert("S", r)
    src.delete("S", ("d", -1.25))
    src.checkpoint(tmp_path / "c")
    dst = comp.engine("llvm")
    dst.restore(tmp_path / "c")
    dst.insert("S", ("f", -0.0))          # lands on the restored 0.0 key
    src.insert("S", ("f", -0.0))
    assert dst.results() == src.results()
    d = src.relations["S"]
    from toaster.runtime.batch import Batch
    batch = Batch.from_rows("S", d.types, rows + [("d", -1.25), ("f", -0.0)], [1] * 5 + [-1, 1])
    assert_matches_duckdb(comp, dst, [batch]) > 0


def test_value_beyond_64_bits_is_a_clean_error(tmp_path):
    from toaster.checkpoint import CheckpointState, TableLayout, describe_program, write_checkpoint
    from toaster.types import INT
    e = compile_sql("CREATE STREAM R(A int); SELECT SUM(A) FROM R;").engine("interp")
    layouts = e._checkpoint_state(with_tables=False).layouts
    state = CheckpointState("interp", "maps", describe_program(e.relations.values(), e.queries, layouts),
                            layouts, {layouts[0].name: {(): 2**63}})
    assert layouts[0] == TableLayout(layouts[0].name, (), INT)
    with pytest.raises(CheckpointError, match="cannot be stored as a 64-bit int"):
        write_checkpoint(tmp_path / "c", state)
    assert list(tmp_path.iterdir()) == []     # nothing half-written left behind
