"""Text fixtures of passes, in the spirit of LLVM's FileCheck: tests/passes/<pass>/<name>.<stage>.

A fixture is a program of the stage its suffix names (`.m3`, `.k3`, `.imp`) with comment lines

    -- RUN: m3_to_k3 | k3_fuse{rules=map_of_singleton}     the pipeline spec to run on it
    -- CHECK: text          a later output line contains text
    -- CHECK-NEXT: text     the line right after the previous match contains text
    -- CHECK-NOT: text      no line between the previous match and the next one contains text

(whitespace runs compare as one space). The output is the printed IR of the spec's last pass.
For the rewrites of k3_fuse, `tests/passes/k3_fuse/<rule>.m3` is the fixture of <rule>: its last
pass is `k3_fuse{rules=<rule>}`, which must change the program, and the program must still
agree with the M3 reference engine afterwards.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from toaster.k3.interpreter import K3Engine
from toaster.k3.rewrites import REWRITES
from toaster.passes import parse_spec, run_spec
from toaster.pipeline import SUFFIX_STAGES, load_pass_modules, parse_stage, print_stage

from test_k3 import run_against_reference

load_pass_modules()

FIXTURE_DIR = Path(__file__).parent / "passes"
DIRECTIVE = re.compile(r"^--\s*(RUN|CHECK|CHECK-NEXT|CHECK-NOT):\s?(.*)$")


@dataclass(frozen=True)
class Check:
    kind: str      # 'CHECK' | 'CHECK-NEXT' | 'CHECK-NOT'
    text: str
    line: int      # line of the directive in the fixture (for messages)


@dataclass(frozen=True)
class Fixture:
    path: Path
    spec: str
    checks: tuple

    @property
    def stage(self) -> str:
        return SUFFIX_STAGES[self.path.suffix]

    def parse(self):
        text = self.path.read_text()
        if self.stage == "imp":     # imperative text comments with //: the -- lines become blank
            text = "\n".join("" if line.lstrip().startswith("--") else line for line in text.splitlines())
        return parse_stage(self.stage, text, str(self.path))


def read_fixture(path: Path) -> Fixture:
    runs, checks = [], []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = DIRECTIVE.match(line.strip())
        if not m:
            continue
        kind, text = m.group(1), m.group(2).strip()
        if not text:
            raise ValueError(f"{path}:{n}: empty {kind} directive")
        if kind == "RUN":
            runs.append(text)
        else:
            checks.append(Check(kind, text, n))
    if len(runs) != 1:
        raise ValueError(f"{path}: expected one RUN line, found {len(runs)}")
    if not any(c.kind != "CHECK-NOT" for c in checks):
        raise ValueError(f"{path}: no CHECK line")
    if checks[0].kind == "CHECK-NEXT":
        raise ValueError(f"{path}:{checks[0].line}: CHECK-NEXT needs a CHECK before it")
    return Fixture(path, runs[0], tuple(checks))


def _norm(s: str) -> str:
    return " ".join(s.split())


def check_output(output: str, checks, where: str = "") -> None:
    """FileCheck-like matching of `checks` against the lines of `output` (AssertionError if not)."""
    lines = [_norm(l) for l in output.splitlines()]
    pos = 0            # first line the next positive check may match
    pending_not = []   # CHECK-NOTs waiting for the next positive match to bound their region
    last = None        # line index of the previous positive match

    def fail(c: Check, msg: str):
        raise AssertionError(f"{where}:{c.line}: {c.kind}: {c.text!r} {msg}\n--- output ---\n{output}")

    def check_nots(end: int):
        for c in pending_not:
            for i in range(pos, end):
                if _norm(c.text) in lines[i]:
                    fail(c, f"found on output line {i + 1}: {lines[i]!r}")
        pending_not.clear()

    for c in checks:
        want = _norm(c.text)
        if c.kind == "CHECK-NOT":
            pending_not.append(c)
            continue
        if c.kind == "CHECK-NEXT":
            i = last + 1
            if i >= len(lines) or want not in lines[i]:
                fail(c, f"is not on the line after output line {last + 1} ({lines[last]!r})")
        else:
            i = next((j for j in range(pos, len(lines)) if want in lines[j]), None)
            if i is None:
                fail(c, f"not found after output line {pos}")
        check_nots(i)
        last, pos = i, i + 1
    check_nots(len(lines))


def run_fixture(fx: Fixture):
    """(input IR, output IR, printed output) of a fixture's RUN spec."""
    ir = fx.parse()
    out = run_spec(fx.spec, ir)
    return ir, out, print_stage(parse_spec(fx.spec)[-1].gives, out)


def _spec_parts(spec: str) -> list[str]:
    return [p.strip() for p in spec.split("|") if p.strip()]


ALL_FIXTURES = sorted(p for p in FIXTURE_DIR.glob("*/*") if p.suffix in SUFFIX_STAGES)


# ------------------------------------------------------------------------------ fixtures

@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path):
    fx = read_fixture(path)
    assert path.parent.name in {p.name for p in parse_spec(fx.spec)}, \
        f"{path}: the RUN line does not run the pass its directory names"
    _, _, text = run_fixture(fx)
    check_output(text, fx.checks, str(path))


# Rules no M3 program can make fire: the lowering never puts an empty bag under a filter or a
# fold, and no rule reduces what it puts there (a group-by, an aggregate, a conditional) to one.
# They are tested on hand-built K3 in tests/test_k3.py; give them .k3 fixtures once K3 parses.
NOT_REACHABLE_FROM_M3 = {"filter_of_empty", "fold_of_empty"}


def test_every_rewrite_has_a_fixture():
    have = {p.stem for p in (FIXTURE_DIR / "k3_fuse").glob("*.m3")}
    assert set(REWRITES) - have == NOT_REACHABLE_FROM_M3, \
        f"rewrites without a fixture: {sorted(set(REWRITES) - have - NOT_REACHABLE_FROM_M3)}"


@pytest.mark.parametrize("rule", [r for r in REWRITES if r not in NOT_REACHABLE_FROM_M3])
def test_rewrite_fires_alone_and_preserves_meaning(rule):
    fx = read_fixture(FIXTURE_DIR / "k3_fuse" / f"{rule}.m3")
    parts = _spec_parts(fx.spec)
    (last,) = parse_spec(parts[-1])
    assert last.name == "k3_fuse" and last.rules == (rule,), f"the last pass must be k3_fuse{{rules={rule}}}"
    m3 = fx.parse()
    before = run_spec("|".join(parts[:-1]), m3)
    after = run_spec(fx.spec, m3)
    assert after != before, f"{rule} did not change its fixture's program"
    with pytest.raises(AssertionError):  # the checks tell the output from the input
        check_output(print_stage("k3", before), fx.checks)
    for seed in (1, 2):
        assert run_against_reference(m3, lambda: K3Engine(after), seed=seed) > 0


# ------------------------------------------------------------------------- the checker

OUT = "a\n  map \\(x) -> x\n    over\n      empty {<int>}\nb\n"


@pytest.mark.parametrize("checks", [
    [("CHECK", "map")],
    [("CHECK", "map \\(x)"), ("CHECK-NEXT", "over"), ("CHECK-NEXT", "empty")],
    [("CHECK", "a"), ("CHECK-NOT", "singleton"), ("CHECK", "b")],
    [("CHECK", "over"), ("CHECK-NOT", "map")],          # map is before the region
    [("CHECK", "map   \\(x)   ->  x")],                 # whitespace runs are one space
])
def test_checker_accepts(checks):
    check_output(OUT, [Check(k, t, n) for n, (k, t) in enumerate(checks)])


@pytest.mark.parametrize("checks, message", [
    ([("CHECK", "flatten")], "not found"),
    ([("CHECK", "empty"), ("CHECK", "map")], "not found"),                 # order matters
    ([("CHECK", "a"), ("CHECK-NEXT", "over")], "is not on the line after"),
    ([("CHECK", "a"), ("CHECK-NOT", "empty"), ("CHECK", "b")], "found on output line 4"),
    ([("CHECK", "over"), ("CHECK-NOT", "b")], "found on output line 5"),  # up to the end
])
def test_checker_rejects(checks, message):
    with pytest.raises(AssertionError, match=message):
        check_output(OUT, [Check(k, t, n) for n, (k, t) in enumerate(checks)])


def test_fixture_needs_one_run_line_and_a_check(tmp_path):
    p = tmp_path / "x.m3"
    p.write_text("-- CHECK: x\n")
    with pytest.raises(ValueError, match="one RUN line"):
        read_fixture(p)
    p.write_text("-- RUN: m3_to_k3\n-- CHECK-NOT: x\n")
    with pytest.raises(ValueError, match="no CHECK line"):
        read_fixture(p)
