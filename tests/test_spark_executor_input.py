"""`--run --backend spark --spark-input executors` in `--batch-size` steps, with checkpoints
(docs/spark-engine.md "DataFrame batches read by the executors"): the driver cuts the streams'
files into byte ranges (file_ranges.py) that must be exactly the Batches driver input reads
(checked without Spark, on awkward files); then Spark's tasks read them: the views equal DuckDB
and driver input after every step, a bad row fails its step with the driver reader's
file:line:column and no change, and checkpoints resume across both inputs."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from toaster.backends.spark import file_ranges
from toaster.backends.spark.file_ranges import ByteRanges, range_steps, read_ranges
from toaster.pipeline import compile_sql
from toaster.runtime.csv_source import open_sources

from test_checkpoint import SQL, write_inputs

MIXED = """
CREATE STREAM R(A int, B string, C date) FROM FILE 'r.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true');
CREATE STREAM S(B string, D float) FROM FILE 's.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true');
CREATE STREAM T(B string NULL, E int NULL) FROM FILE 't.csv' LINE DELIMITED CSV (delimiter := ',');
CREATE STREAM U(B string NULL, E int NULL) FROM FILE 't.csv' LINE DELIMITED CSV (delimiter := ',');
CREATE STREAM V(B string, F int) FROM FILE 'v.csv' LINE DELIMITED CSV (delimiter := '::');
SELECT R.B, SUM(R.A * S.D) FROM R, S WHERE R.B = S.B GROUP BY R.B;
SELECT T.B, SUM(T.E) FROM T GROUP BY T.B;
SELECT U.B, SUM(U.E) FROM U GROUP BY U.B;
SELECT V.B, SUM(V.F) FROM V GROUP BY V.B;
"""


def _awkward(directory: Path, seed: int) -> None:
    """Sequence-ordered r.csv and s.csv (ties, a number smaller than an earlier one, '+7'), and
    t.csv / v.csv ('::': not Arrow's), with empty lines, CRLF and lone-CR breaks, no final newline."""
    rng = random.Random(seed)

    def text(lines):
        out = []
        for line in lines:
            out.append(line + rng.choice(["\n", "\n", "\n", "\r\n", "\n\n", "\r"]))
        return "".join(out).rstrip("\r\n") if rng.random() < 0.5 else "".join(out)
    seq = sorted(rng.randint(1, 60) for _ in range(40))
    seq[7] = 2                                     # smaller than its predecessor: keeps its place
    r = [f"{s}|{rng.choice('10')}|{rng.randint(-3, 9)}|{rng.choice('abc')}|1995-01-0{rng.randint(1, 9)}" for s in seq]
    r[11] = "+7" + r[11][r[11].index("|"):]
    s = [f"{v}|1|{rng.choice('abcd')}|{rng.choice(['0.5', '1.5'])}" for v in sorted(rng.randint(1, 60) for _ in range(25))]
    t = [f"{rng.choice(['a', 'b', ''])},{rng.choice(['', '3', '7'])}" for _ in range(37)]    # NULLs in T
    v = [f"{rng.choice('ab')}::{rng.randint(0, 9)}" for _ in range(5)]      # the line parser's delimiter
    for name, lines in (("r", r), ("s", s), ("t", t), ("v", v)):
        (directory / f"{name}.csv").write_bytes(text(lines).encode())


def _rows(batch):
    return sorted(zip(batch.signs.tolist(), *[list(c.to_pylist() if hasattr(c, "to_pylist") else c.tolist())
                                               for c in batch.columns]))


@pytest.mark.parametrize("size", [None, 1, 3, 7, 100])
def test_byte_ranges_are_the_driver_readers_batches(tmp_path, monkeypatch, size):
    """Without Spark: range_steps gives the steps open_sources(steps=True) gives (sequence-ordered
    windows, two relations of one file taking turns, independent files in declaration order), a
    ByteRanges per Batch with its rows, and its pieces read by the tasks' reader hold those rows;
    small scan pieces and small task pieces so that every boundary is crossed."""
    monkeypatch.setattr(file_ranges, "SCAN_BYTES", 64)
    monkeypatch.setattr(file_ranges, "MIN_PIECE_ROWS", 2)
    for seed in range(4):
        _awkward(tmp_path, seed)
        comp = compile_sql(MIXED, mode="batch", base_dir=str(tmp_path))
        decls = list(comp.m3.relations)
        want = list(open_sources(decls, batch_size=size, base_dir=str(tmp_path), steps=True)[1])
        got = list(range_steps(decls, size, str(tmp_path), parts=3))
        assert [[(b.relation.upper(), len(b)) for b in s] for s in got] == \
               [[(b.relation.upper(), len(b)) for b in s] for s in want]
        by_name = {d.name: d for d in decls}
        for gs, ws in zip(got, want):
            for g, w in zip(gs, ws):
                assert isinstance(g, ByteRanges) and _rows(read_ranges(by_name[g.relation], g)) == _rows(w)
        assert any(len(r.pieces) > 1 for s in got for r in s) or size in (1, 3)
    for name in ("r", "s"):       # the sequence numbers the driver reads digit by digit
        seq = np.concatenate([b.seq for b in open_sources([by_name[name.upper()]], base_dir=str(tmp_path))[1]])
        assert file_ranges._seq_keys(str(tmp_path / f"{name}.csv"), "|")[2].tolist() == seq.tolist()


def test_bad_sequence_numbers_and_lines_are_found_by_the_reader(tmp_path):
    """A sequence number that is not a number takes no place in the merge; the piece holding it
    raises the driver reader's error, its line numbered in the whole file."""
    from toaster.errors import InputError
    write_inputs(tmp_path, 5, n_r=20, n_s=9)
    lines = (tmp_path / "r.csv").read_text().splitlines()
    lines[12] = "x" + lines[12]
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    comp = compile_sql(SQL, mode="batch", base_dir=str(tmp_path))
    decls = {d.name: d for d in comp.m3.relations}
    with pytest.raises(InputError) as driver:
        list(open_sources(list(decls.values()), batch_size=4, base_dir=str(tmp_path), steps=True)[1])
    with pytest.raises(InputError) as tasks:
        for step in range_steps(list(decls.values()), 4, str(tmp_path)):
            for r in step:
                read_ranges(decls[r.relation], r)
    assert str(tasks.value) == str(driver.value) and "r.csv:13:1:" in str(tasks.value)


# ------------------------------------------------------------------ with Spark
def _results(engine):
    return {r.name: sorted(map(tuple, r.rows)) for r in engine.results()}


def _compare(comp, engine, oracle):
    from toaster.testing import compare_results
    results = {r.name: r for r in engine.results()}
    for q, sql in zip(comp.queries, comp.oracle_sql):
        assert not compare_results(results[q.name], oracle.query(sql), len(q.key_columns)), q.name


def test_steps_read_by_the_executors_equal_duckdb_and_driver_input(spark, tmp_path, monkeypatch):
    """Two sequence-ordered streams with deletions in windows of 11 events as ByteRanges (several
    pieces, a task each): after every step the views equal DuckDB's and those of the same steps
    read on the driver (apply_many); the relation the executors read (S) is never read here; a
    bad field in step 3 fails it with the driver reader's file:line:column and leaves step 2's
    views (then the good step 3 and the rest apply)."""
    from toaster.backends.spark.engine import SparkEngine
    from toaster.backends.spark.frame_input import frame_relations
    from toaster.errors import InputError
    from toaster.testing import Oracle
    monkeypatch.setattr(file_ranges, "MIN_PIECE_ROWS", 2)
    write_inputs(tmp_path, 23, n_r=30, n_s=14)
    comp = compile_sql(SQL, mode="batch", base_dir=str(tmp_path))
    prog = comp.stage("spark")
    read = set(frame_relations(prog.native.inputs, prog.relations)[0])
    assert read
    real = file_ranges.read_ranges

    def on_driver(decl, ranges, needed=None):
        assert decl.name not in read, f"{decl.name} read on the driver"
        return real(decl, ranges, needed)
    monkeypatch.setattr(file_ranges, "read_ranges", on_driver)
    decls = list(comp.m3.relations)
    want = list(open_sources(decls, 11, str(tmp_path), steps=True)[1])
    good = list(range_steps(decls, 11, str(tmp_path), parts=2))
    assert len(good) == len(want) >= 4 and any(len(r.pieces) > 1 for r in good[0])
    # first with a bad float in the third step's S rows (S is read by the executors, R here):
    # step 3 fails whole, step 2's views stay
    s3 = next(r for r in good[2] if r.relation == "S")
    text = (tmp_path / "s.csv").read_text()
    lines = text.split("\n")
    bad = s3.pieces[-1][3]                  # the first line of its last piece
    head, _, d = lines[bad - 1].rpartition("|")
    lines[bad - 1] = f"{head}|x{d}"
    (tmp_path / "s.csv").write_text("\n".join(lines))
    with pytest.raises(InputError) as driver:
        list(open_sources(decls, 11, str(tmp_path), steps=True)[1])
    broken = list(range_steps(decls, 11, str(tmp_path), parts=2))
    exe = SparkEngine(prog, spark=spark, partitions=2)
    drv = SparkEngine(prog, spark=spark, partitions=2)
    oracle = Oracle(decls)
    try:
        for k, (g, w) in enumerate(zip(broken, want)):
            if k == 2:
                before = _results(exe)
                with pytest.raises(InputError) as tasks:
                    exe.apply_frames([(r.relation, r) for r in g])
                assert str(tasks.value) == str(driver.value) and f"s.csv:{bad}:" in str(tasks.value)
                assert _results(exe) == before
                (tmp_path / "s.csv").write_text(text)       # the good file from this step on
            if k >= 2:
                g = good[k]
            exe.apply_frames([(r.relation, r) for r in g])
            drv.apply_many(w)
            for b in w:
                oracle.apply(b)
            assert _results(exe) == _results(drv)
            _compare(comp, exe, oracle)
    finally:
        oracle.close()
        drv.close()
        exe.close()


def test_cli_checkpoints_resume_across_driver_and_executor_input(spark, tmp_path, capsys):
    """`--spark-input executors --batch-size 6 --checkpoint-dir`: a run that fails at a bad row
    in step 4 (exit 2, the reader's file:line:column; a bad row the tasks find: the test above)
    leaves checkpoints; a driver-input run over
    the first 3 steps' rows leaves its own. With the whole files, --resume with executor input
    and with driver input from the first, and with executor input from the second, all end with
    the views of an uninterrupted run (the reference interpreter's over the whole files)."""
    import shutil
    from toaster.checkpoint import latest_checkpoint
    from toaster.pipeline import main
    write_inputs(tmp_path, 7, n_r=24, n_s=12)
    comp = compile_sql(SQL, mode="batch", base_dir=str(tmp_path))
    steps = list(range_steps(list(comp.m3.relations), 6, str(tmp_path)))
    r4 = next(r for r in steps[3] if r.relation == "R")      # R is read on the driver (no task fails)
    bad = r4.pieces[0][3] + 1
    texts = {n: (tmp_path / f"{n}.csv").read_text() for n in "rs"}
    base = [str(tmp_path / "q.sql"), "--run", "--output", "json", "--base-dir", str(tmp_path)]
    assert main(base + ["--backend", "interp"]) == 0
    want = json.loads(capsys.readouterr().out)

    def run(state, executors, resume=False):
        rc = main(base + ["--backend", "spark", "--batch-size", "6", "--checkpoint-every", "2",
                          "--checkpoint-dir", str(tmp_path / state)] +
                  (["--spark-input", "executors"] if executors else []) + (["--resume"] if resume else []))
        return rc, capsys.readouterr()
    lines = texts["r"].split("\n")
    lines[bad - 1] += "|7"
    (tmp_path / "r.csv").write_text("\n".join(lines))
    rc, out = run("exe", True)
    assert rc == 2 and f"r.csv:{bad}:" in out.err and "too many fields" in out.err, out.err
    assert latest_checkpoint(str(tmp_path / "exe")) is not None
    for n in "rs":      # the rows of the first 3 steps (the driver reads a small file whole first)
        rows = sum(len(r) for step in steps[:3] for r in step if r.relation == n.upper())
        (tmp_path / f"{n}.csv").write_text("".join(texts[n].splitlines(keepends=True)[:rows]))
    rc, out = run("drv", False)
    assert rc == 0 and latest_checkpoint(str(tmp_path / "drv")) is not None, out.err
    shutil.copytree(tmp_path / "exe", tmp_path / "exe2")
    for n in "rs":
        (tmp_path / f"{n}.csv").write_text(texts[n])
    for state, executors in (("exe", True), ("exe2", False), ("drv", True)):
        rc, out = run(state, executors, resume=True)
        assert rc == 0 and "batches already applied" in out.err, out.err
        assert json.loads(out.out) == want, (state, executors)
