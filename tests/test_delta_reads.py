"""The projected batch delta (toaster/runtime/delta_reads.py): columns that only flow into the
keys of temporaries nobody reads by those keys are left unread, and results stay DuckDB's when
rows differ only there (merged in the delta map), cancel within a batch, or repeat."""
from __future__ import annotations

import random

import numpy as np
import pytest

from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing.differential import run_differential
from toaster.types import INT, STRING

SCHEMA = "CREATE STREAM R(A int, B int);\nCREATE STREAM S(K int, C int, D int, T string);\n"
EXISTS = SCHEMA + "SELECT R.B, COUNT(*) AS N FROM R WHERE EXISTS (SELECT * FROM S WHERE S.K = R.A AND S.C < S.D) GROUP BY R.B;"
S_TYPES = (INT, INT, INT, STRING)


def _needed(sql: str, relation: str) -> tuple:
    return compile_sql(sql, mode="batch").engine("llvm").columns_needed(relation)


def test_exists_reads_only_the_columns_its_statements_use():
    # the EXISTS groups the delta by all of S's columns for its domain, then reads K, C, D
    assert _needed(EXISTS, "S") == (True, True, True, False)


def _program(count_body, after=()):
    """on_batch_S: TMP[k0, k1] += v over DELTA_S; then `count_body(g0, w)` over TMP's entries."""
    from types import SimpleNamespace
    from toaster.imperative.ir import ForEach, LocalRef, MapAdd, MapClear, MapSpec
    k = [LocalRef(f"k{i}", INT) for i in range(2)]
    g0, g1, v, w = LocalRef("g0", INT), LocalRef("g1", INT), LocalRef("v", INT), LocalRef("w", INT)
    body = (MapClear("TMP"),
            ForEach("DELTA_S", (None, None), tuple(k), v, (MapAdd("TMP", tuple(k), v),)),
            ForEach("TMP", (None, None), (g0, g1), w, count_body(g0, w))) + tuple(after)
    maps = (MapSpec("TMP", (INT, INT), INT, "temp"), MapSpec("OUT", (INT,), INT, "view"),
            MapSpec("DEAD", (INT,), INT, "temp"))
    return body, SimpleNamespace(maps=maps, triggers=(SimpleNamespace(body=body),))


def test_merged_rows_are_only_allowed_where_no_statement_sees_them():
    from toaster.imperative.ir import BinOp, ForEach, If, Lit, LocalRef, MapAdd
    from toaster.runtime.delta_reads import delta_columns_needed
    one = Lit(1, INT)
    d = LocalRef("d", INT)
    domain = ForEach("DEAD", (None,), (d,), LocalRef("u", INT), (MapAdd("OUT", (d,), one),))
    cases = {   # TMP's entries merge when column 1 is unread: which loops over TMP can tell
        "squared": ((lambda g, w: (MapAdd("OUT", (g,), BinOp("*", w, w, INT)),)), (), True),
        "scaled": ((lambda g, w: (MapAdd("OUT", (g,), BinOp("*", Lit(2, INT), w, INT)),)), (), False),
        "tested": ((lambda g, w: (If(BinOp("!=", w, one, INT), (MapAdd("OUT", (g,), one),)),)), (), True),
        "counts into a view": ((lambda g, w: (MapAdd("OUT", (g,), one),)), (), True),
        "counts a domain": ((lambda g, w: (MapAdd("DEAD", (g,), one),)), (domain,), False),
        "sums and counts": ((lambda g, w: (MapAdd("OUT", (g,), w), MapAdd("OUT", (g,), one))), (), True),
        "sums into a domain": ((lambda g, w: (MapAdd("DEAD", (g,), w),)), (domain,), False),
    }
    for name, (count_body, after, column_1_read) in cases.items():
        body, program = _program(count_body, after)
        assert delta_columns_needed(body, "S", 2, program) == [True, column_1_read], name


def _stream(rels, seed: int = 3):
    rng = random.Random(seed)
    live_s: list = []
    out = []
    for step in range(30):
        if step % 3 == 0:
            rows = [(rng.randrange(6), rng.randrange(3)) for _ in range(rng.randrange(1, 5))]
            out.append(Batch.from_rows("R", (INT, INT), rows))
            continue
        rows, signs = [], []
        for _ in range(rng.randrange(1, 8)):
            if live_s and rng.random() < 0.35:      # deletes, some cancelling this batch's inserts
                rows.append(live_s.pop(rng.randrange(len(live_s))))
                signs.append(-1)
            else:           # few K, C, D values, many T: rows that differ only in T
                row = (rng.randrange(6), rng.randrange(3), rng.randrange(3), f"t{rng.randrange(50)}")
                rows.append(row)
                signs.append(1)
                live_s.append(row)
        out.append(Batch.from_rows("S", S_TYPES, rows, np.array(signs, np.int8)))
    return out


PROJECTED = [EXISTS,
             SCHEMA + "SELECT R.B, SUM(R.A) AS N FROM R WHERE NOT EXISTS (SELECT * FROM S WHERE S.K = R.A) GROUP BY R.B;",
             SCHEMA + "SELECT S.K, COUNT(DISTINCT S.C) AS N FROM S GROUP BY S.K;",
             SCHEMA + "SELECT X.K, COUNT(*) AS N FROM (SELECT S.K, S.C FROM S GROUP BY S.K, S.C "
                      "HAVING SUM(S.D) > 2) X GROUP BY X.K;"]


@pytest.mark.parametrize("sql", PROJECTED, ids=["exists", "not_exists", "count_distinct", "having"])
def test_projected_delta_matches_duckdb(sql):
    assert not all(_needed(sql, "S"))
    report = run_differential(sql, "llvm", _stream, mode="batch")
    assert report.nonempty_checks > 0
