"""The command line: running examples, dumping IRs, the pass manager, and error exits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toaster.pipeline import ALL_STAGES, compile_sql, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "rst.sql")


def run_cli(*args, cwd=ROOT, env=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env and "PYTHONPATH" in env else []))
    return subprocess.run([sys.executable, "-m", "toaster.pipeline", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=300)


def test_run_example_json_matches_calc_reevaluation(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    outputs = {}
    for backend in ("interp", "calc", "llvm"):
        assert main([EXAMPLE, "--run", "--backend", backend, "--output", "json"]) == 0
        outputs[backend] = json.loads(capsys.readouterr().out)
    assert outputs["interp"] == outputs["calc"] == outputs["llvm"]
    names = [r["name"] for r in outputs["interp"]]
    assert names == ["QUERY_1", "QUERY_2"]
    q2 = outputs["interp"][1]
    assert q2["columns"][:q2["key_columns"]] == ["C"]
    assert q2["rows"], "the example must produce rows"


def test_dump_ir_all_prints_every_stage():
    r = run_cli(EXAMPLE, "--dump-ir", "all")
    assert r.returncode == 0, r.stderr
    for stage in ALL_STAGES:
        assert f"==== {stage} " in r.stdout
    assert "ON + R(" in r.stdout           # M3 triggers
    assert "define " in r.stdout           # LLVM IR
    assert "pyspark" in r.stdout.lower()   # generated PySpark program


def test_dump_dir_writes_one_numbered_file_per_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main([EXAMPLE, "--dump-ir", "m3", "--dump-dir", str(tmp_path)]) == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files[0].startswith("01-parse_sql")
    assert any("calc_to_m3.m3" in f for f in files)


def test_list_passes(capsys):
    assert main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    for name in ("parse_sql", "calc_to_m3", "m3_to_k3", "k3_fuse", "k3_to_imp", "imp_to_llvm",
                 "m3_to_dist", "dist_to_spark"):
        assert name in out


def test_skip_pass_keeps_results_equal(monkeypatch):
    sql = (ROOT / "tests" / "queries" / "skeleton" / "rst_sum.sql").read_text()
    from toaster.testing import random_stream
    full = compile_sql(sql)
    skipped = compile_sql(sql, skip=["k3_fuse"])
    batches = random_stream(full.m3.relations, seed=3, n_batches=40, deletes=True)
    a, b, ref = full.engine("llvm"), skipped.engine("llvm"), full.engine("interp")
    for batch in batches:
        for e in (a, b, ref):
            e.apply(batch)
    assert a.results() == b.results() == ref.results()
    assert a.results()[0].rows


def test_user_pass_from_the_command_line(tmp_path):
    (tmp_path / "my_passes.py").write_text(
        "from toaster.passes import pass_\n"
        "CALLS = []\n"
        "@pass_('count_maps', takes='m3')\n"
        "def count_maps(program, options):\n"
        "    '''print how many maps the program has'''\n"
        "    print('MAPS', len(program.maps))\n"
        "    return program\n")
    r = run_cli(EXAMPLE, "--add-pass", "my_passes:count_maps@calc_to_m3", "--dump-ir", "m3",
                env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "MAPS " in r.stdout
    r = run_cli("--list-passes", "--add-pass", "my_passes:count_maps@calc_to_m3",
                env={"PYTHONPATH": str(tmp_path)})
    assert "calc_to_m3 count_maps" in r.stdout


@pytest.mark.parametrize("text, expect", [
    ("CREATE STREAM R(A int);\nSELECT SUM(A) FROM R WHERE (A = 1\n", ":2:"),
    ("CREATE STREAM R(A int);\nSELECT SUM(Q) FROM R;\n", "2:12: error: unknown column Q"),
    ("CREATE STREAM R(A int);\nSELECT COUNT(*) FROM R WHERE ABS(NULL) = 1;\n", "2:34: not supported yet: NULL as an argument of ABS"),
])
def test_user_errors_exit_2_with_one_line(tmp_path, text, expect):
    q = tmp_path / "q.sql"
    q.write_text(text)
    r = run_cli(str(q), "--run")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(str(q)) and expect in lines[0]


def test_malformed_input_row_exits_2(tmp_path):
    (tmp_path / "r.csv").write_text("1|2\n3|x\n")
    q = tmp_path / "q.sql"
    q.write_text("CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED CSV (delimiter := '|');\n"
                 "SELECT SUM(R.A) FROM R;\n")
    r = run_cli(str(q), "--run", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("r.csv:2:")
    assert "Traceback" not in r.stderr


def test_view_graph_as_a_picture(tmp_path):
    png = tmp_path / "views.png"
    r = run_cli(EXAMPLE, "--dot", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
