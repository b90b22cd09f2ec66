"""imp_guard_loops (toaster/imperative/guard.py): which loops it guards, which it leaves, and that the
guarded programs still give DuckDB's answers (the fixture tests/passes/imp_guard_loops/ shows the
rewrite of TPC-H Q17's shape)."""
from __future__ import annotations

import pytest

from toaster.imperative.guard import imp_guard_loops
from toaster.imperative.passes import verify_imp
from toaster.pipeline import parse_stage, print_stage
from toaster.testing import random_stream, run_differential

HEADER = """IMPERATIVE PROGRAM (tuple mode)
CREATE STREAM L(PK int, QTY float, PRICE float);
DECLARE RESULT QUERY_1 KEYS () VALUES (OUT:float FROM OUT);

view map OUT[] -> float;
view map mL[int, float] -> float; indexes (0)
view map mP[int] -> int;
view map mQ[float] -> int;

void on_insert_L(int l_pk, float l_qty, float l_price) {
"""


def guarded(body: str) -> str:
    prog = parse_stage("imp", HEADER + body + "}\n")
    out = verify_imp(imp_guard_loops(prog))
    return " ".join(print_stage("imp", out).split())


def test_invariant_lookup_factor_guards_the_loop():
    text = guarded("""
  foreach ([l_pk, float k_1] -> float v_1 in mL) {
    if ((k_1 < l_qty)) {
      OUT[] += (v_1 * (float)mP[l_pk]);
    }
  }
""")
    assert ("float guard_1 = (float)mP[l_pk]; if ((guard_1 != 0.0)) { foreach ([l_pk, float k_1] -> float v_1 in mL) "
            "{ if ((k_1 < l_qty)) { OUT[] += (v_1 * guard_1); } } }") in text


@pytest.mark.parametrize("body", [
    # the factor reads the loop's key: not invariant
    "foreach ([l_pk, float k_2] -> float v_2 in mL) { OUT[] += (v_2 * (float)mQ[k_2]); }",
    # the body writes the looked-up map: not invariant
    "foreach ([l_pk, float k_3] -> float v_3 in mL) { mP[l_pk] += 1; OUT[] += (v_3 * (float)mP[l_pk]); }",
    # one write without the factor: the loop must run even when it is 0
    "foreach ([l_pk, float k_4] -> float v_4 in mL) { OUT[] += (v_4 * (float)mP[l_pk]); OUT[] += v_4; }",
    # the lookup is a term of a sum, not a factor
    "foreach ([l_pk, float k_5] -> float v_5 in mL) { OUT[] += (v_5 + (float)mP[l_pk]); }",
])
def test_loops_that_must_run_are_left_alone(body):
    assert "guard_" not in guarded(body)


SQL = """
CREATE STREAM L(PK int, QTY float, PRICE float);
CREATE STREAM P(PK int, BRAND int);
SELECT SUM(L.PRICE) FROM L, P WHERE L.PK = P.PK AND P.BRAND = 2
  AND L.QTY < (SELECT 0.6 * AVG(L2.QTY) FROM L L2 WHERE L2.PK = L.PK);
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_guarded_program_equals_duckdb(backend):
    from toaster.pipeline import compile_sql
    assert "guard_1" in print_stage("imp", compile_sql(SQL).imp)
    report = run_differential(SQL, backend, lambda rels: random_stream(
        rels, seed=3, deletes=True, n_batches=25, max_batch=6,
        domains={"PK": range(4), "BRAND": range(3), "QTY": range(1, 6)}))
    assert report.checks > 0
