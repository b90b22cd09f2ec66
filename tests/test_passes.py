"""The pass manager: pipelines as data, switches that do something, typed options, named failures."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from toaster.errors import InternalError, UsageError
from toaster.m3.printer import print_m3
from toaster.passes import Pass, get_pass, parse_spec, pass_, register, run_spec
from toaster.pipeline import compile_sql, print_stage
from toaster.testing import random_stream

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "rst.sql")
Q13 = str(ROOT / "tests" / "queries" / "tpch" / "q13.sql")
JOIN = """CREATE STREAM R(A int, B int); CREATE STREAM S(B int, C int);
SELECT R.A, SUM(R.A * S.C) FROM R, S WHERE R.B = S.B AND 1 = 1 GROUP BY R.A;"""


def run_cli(*args, cwd=ROOT, pythonpath=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([str(pythonpath)] if pythonpath else []))
    return subprocess.run([sys.executable, "-m", "toaster.pipeline", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _same_results(*comps, backend="interp", n=25):
    engines = [c.engine(backend) for c in comps]
    for batch in random_stream(comps[0].m3.relations, seed=5, n_batches=n, deletes=True):
        for e in engines:
            e.apply(batch)
    first = engines[0].results()
    assert all(e.results() == first for e in engines[1:])
    return first


# ------------------------------------------------------------- switches that switch

def test_skipping_simplify_calc_changes_the_calc_stage_and_keeps_results():
    full, skipped = compile_sql(JOIN), compile_sql(JOIN, skip=["simplify_calc"])
    assert print_stage("calc", full.calc) != print_stage("calc", skipped.calc)
    assert "simplify_calc" not in [r.spec for r in skipped.trace]
    _same_results(full, skipped)


def test_skipping_dist_fuse_changes_the_pyspark_program():
    full = compile_sql(JOIN, mode="batch")
    unfused = compile_sql(JOIN, mode="batch", skip=["dist_fuse"])
    blocks = lambda c: sum(len(t.blocks) for t in c.stage("dist").triggers)
    assert blocks(unfused) > blocks(full)
    assert full.stage("spark").source != unfused.stage("spark").source


@pytest.mark.parametrize("name", ["parse_sql", "resolve_sql", "calc_to_m3", "m3_to_k3", "dist_blocks"])
def test_a_required_pass_says_it_cannot_be_skipped(name):
    with pytest.raises(UsageError, match=f"pass {name} cannot be skipped"):
        compile_sql(JOIN, skip=[name])


def test_unknown_pass_and_option_names_are_usage_errors():
    with pytest.raises(UsageError, match="unknown pass 'nope'"):
        compile_sql(JOIN, skip=["nope"])
    with pytest.raises(UsageError, match="has no option 'colour'"):
        compile_sql(JOIN, pass_options={"calc_to_m3": {"colour": "red"}})
    with pytest.raises(UsageError, match="not one of"):
        compile_sql(JOIN, pass_options={"calc_to_m3": {"strategy": "magic"}})
    with pytest.raises(UsageError, match="cannot add pass"):
        compile_sql(JOIN, add=[("k3_fuse", "NOT_A_PASS")])


# ----------------------------------------------------------------- typed options

def test_pass_options_are_typed_and_round_trip_through_specs():
    p = get_pass("calc_to_m3").with_options(strategy="ivm", depth="2")
    assert (p.strategy, p.depth) == ("ivm", 2)
    assert p.spec() == "calc_to_m3{strategy=ivm depth=2}"
    assert parse_spec(p.spec()) == [p]
    assert get_pass("calc_to_m3").spec() == "calc_to_m3"
    dist = parse_spec("m3_to_dist{partitioning=Q:local,R:0+1}")[0]
    assert dist.partitioning == ("Q:local", "R:0+1")


def test_strategy_flag_is_the_calc_to_m3_option():
    a = compile_sql(JOIN, strategy="ivm")
    b = compile_sql(JOIN, pass_options={"calc_to_m3": {"strategy": "ivm"}})
    assert print_m3(a.m3) == print_m3(b.m3) != print_m3(compile_sql(JOIN).m3)


def test_run_spec_runs_a_pipeline_string():
    m3 = compile_sql(JOIN).m3
    k3 = run_spec("m3_to_k3 | k3_fuse", m3)
    assert print_stage("k3", k3) == print_stage("k3", compile_sql(JOIN).k3)


# ------------------------------------------------------- every branch through it

def test_the_distributed_branch_compiles_its_batch_program_through_the_manager():
    seen = []

    @pass_("test_note_m3", "m3")
    def note(program, options):
        seen.append(program.mode)
        return program
    comp = compile_sql(JOIN, mode="tuple", add=[("test_note_m3", None)])
    comp.stage("llvm")
    comp.stage("spark")
    assert sorted(seen) == ["batch", "tuple"]
    branches = {(r.branch, r.spec) for r in comp.trace}
    assert ("distributed", "calc_to_m3") in branches and ("distributed", "test_note_m3") in branches


def test_batch_mode_branches_share_the_front_end():
    comp = compile_sql(JOIN, mode="batch")
    comp.stage("llvm")
    comp.stage("spark")
    reused = [r.spec for r in comp.trace if r.reused]
    assert reused == ["parse_sql", "resolve_sql", "nonfinite_sums", "sql_to_calc", "simplify_calc", "calc_to_m3"]


def test_each_pass_reports_whether_it_changed_the_program():
    comp = compile_sql(JOIN)
    comp.stage("llvm")
    changed = {r.spec: r.changed for r in comp.trace}
    assert changed["imp_verify"] is False       # a verifier returns its input
    assert changed["calc_to_m3"] is True        # a lowering always gives a new stage
    assert all(r.seconds >= 0 for r in comp.trace)


def test_stage_means_the_last_pass_that_gives_it_in_every_branch():
    comp = compile_sql(JOIN, mode="batch")
    last_dist = [r for r in comp.trace if r.gives == "dist"]
    comp.stage("dist")
    last_dist = [r for r in comp.trace if r.gives == "dist"][-1]
    assert last_dist.spec == "dist_fuse"
    assert comp.stage("dist") is last_dist.output


# ------------------------------------------------------------- failures, named

@register
@dataclass(frozen=True)
class _Broken(Pass):
    name = "test_broken"
    takes = "k3"
    gives = "k3"
    description = "raises, to test how failures are reported"

    def run(self, program, options):
        raise RuntimeError("deliberately broken\nsecond line")


def test_an_exception_in_a_pass_is_an_internal_error_naming_it():
    comp = compile_sql(JOIN, add=[("test_broken", "k3_fuse")], source_file="q.sql")
    with pytest.raises(InternalError) as e:
        comp.stage("imp")
    assert str(e.value) == ("internal error in pass test_broken (stage k3) on q.sql: "
                            "RuntimeError: deliberately broken")


def test_cli_internal_error_is_one_line_and_exit_3(tmp_path):
    (tmp_path / "broken_pass.py").write_text(
        "from toaster.passes import pass_\n"
        "@pass_('broken', takes='k3')\n"
        "def broken(program, options):\n"
        "    return {}['missing']\n")
    r = run_cli(EXAMPLE, "--add-pass", "broken_pass:broken", "--dump-ir", "imp", pythonpath=tmp_path)
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        f"toaster: internal error in pass broken (stage k3) on {EXAMPLE}: KeyError: 'missing'; "
        "rerun with --traceback for details"]
    r = run_cli(EXAMPLE, "--add-pass", "broken_pass:broken", "--dump-ir", "imp", "--traceback",
                pythonpath=tmp_path)
    assert r.returncode == 3 and "Traceback" in r.stderr and "return {}['missing']" in r.stderr


@pytest.mark.parametrize("args, expect", [
    (["--batch-size", "0", "--run"], "--batch-size must be at least 1"),
    (["--add-pass", "no_such_module_xyz:p"], "cannot import module no_such_module_xyz"),
    (["--skip-pass", "parse_sql"], "pass parse_sql cannot be skipped"),
    (["--add-pass", "k3_fuse@NOT_A_PASS"], "cannot add pass k3_fuse after NOT_A_PASS"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--pass-option", "k3_fuse"], "expected PASS.KEY=VALUE"),
    (["--backend", "nope"], "unknown backend 'nope'"),
    (["--dump-ir", "k4"], "unknown stage 'k4'"),
])
def test_cli_usage_errors_are_one_line_and_exit_2(args, expect):
    r = run_cli(EXAMPLE, *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], r.stderr


def test_cli_interrupt_is_one_line_and_exit_130(tmp_path):
    (tmp_path / "interrupt_pass.py").write_text(
        "from toaster.passes import pass_\n"
        "@pass_('interrupt', takes='m3')\n"
        "def interrupt(program, options):\n"
        "    raise KeyboardInterrupt\n")
    r = run_cli(EXAMPLE, "--add-pass", "interrupt_pass:interrupt", "--dump-ir", "m3", pythonpath=tmp_path)
    assert r.returncode == 130
    assert r.stderr.strip() == "toaster: interrupted"


# ------------------------------------------------------------------ dumps

def test_dump_dir_shows_the_distributed_branch_and_survives_a_refusal(tmp_path):
    r = run_cli(Q13, "--dump-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert any(f.endswith("imp_to_llvm.llvm.txt") for f in files)
    # the distributed branch compiled its batch-mode program through the manager (and was
    # refused at m3_to_dist or later): its front-end passes are dumped all the same
    assert any(f.startswith(tuple(f"{i:02d}-distributed.calc_to_m3" for i in range(100))) for f in files)


def test_print_after_and_time_passes():
    r = run_cli(EXAMPLE, "--print-after", "k3_fuse", "--time-passes")
    assert r.returncode == 0, r.stderr
    assert "==== after k3_fuse (local, stage k3)" in r.stdout
    assert "imp_to_llvm" not in r.stderr          # only what ran
    assert "k3_fuse" in r.stderr and "total" in r.stderr


# -------------------------------------------------- starting from a later stage

@pytest.mark.parametrize("stage, backends", [("m3", ("interp", "llvm")), ("k3", ("k3", "llvm")),
                                             ("imp", ("imp", "llvm"))])
def test_a_compilation_can_start_from_a_printed_program(tmp_path, capsys, monkeypatch, stage, backends):
    from toaster.cli import main
    monkeypatch.chdir(ROOT)
    program = tmp_path / f"rst.{stage}"
    program.write_text(print_stage(stage, compile_sql(Path(EXAMPLE).read_text()).stage(stage)))
    assert main([EXAMPLE, "--run", "--backend", "llvm", "--output", "json"]) == 0
    from_sql = capsys.readouterr().out
    for backend in backends:
        assert main([str(program), "--run", "--backend", backend, "--output", "json"]) == 0
        assert capsys.readouterr().out == from_sql
    assert main([str(program), "--run", "--backend", "calc"]) == 2      # calc comes before any of them
    assert f"starts at stage {stage}" in capsys.readouterr().err


# ------------------------------------------------------------ the plan view

def test_the_materialization_plan_says_how_each_map_is_maintained():
    from toaster.m3.plan import materialization_plan
    sql = ("CREATE STREAM R(A int, B int); CREATE STREAM S(B int, C int);\n"
           "SELECT SUM(R.A) FROM R WHERE R.A > (SELECT SUM(S.C) FROM S);")
    comp = compile_sql(sql)
    plan = materialization_plan(comp.m3)
    query = plan.maps[0]
    how = {x.relation: x.how for x in query.maintenance}
    assert how["S"] == "re-evaluated"           # an uncorrelated nested aggregate: VLDBJ'14 §5.1
    assert len(set(plan.decisions)) == len(plan.decisions)
    text = str(plan)
    assert text.startswith("-- materialization plan (mode: tuple)")
    assert "on S: re-evaluated" in text
    r = run_cli(EXAMPLE, "--dump-ir", "plan")
    assert r.returncode == 0 and "==== plan" in r.stdout and "incremental" in r.stdout
