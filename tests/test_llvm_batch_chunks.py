"""process_<REL> runs a batch trigger once per chunk of DELTA_CHUNK_ROWS rows (codegen.py): a
batch longer than a chunk gives DuckDB's views, with deletes and self-joins of the delta, and
stays atomic: an integer overflow in its last chunk rolls back the chunks before it too."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from toaster.backends.llvm.codegen import DELTA_CHUNK_ROWS
from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results
from toaster.types import INT

SCHEMA = "CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
QUERIES = {
    "grouped sum": SCHEMA + "SELECT B, SUM(A) AS total, COUNT(*) AS n FROM R GROUP BY B;",
    "self-join of the delta": SCHEMA + "SELECT x.B, SUM(x.A * y.A) AS s FROM R x, R y "
                                       "WHERE x.B = y.B GROUP BY x.B;",
    "nested aggregate": SCHEMA + "SELECT COUNT(*) AS n FROM R r WHERE r.A > "
                                 "(SELECT SUM(r2.A) FROM R r2 WHERE r2.B = r.B) / 4;",
}
ROWS = 2 * DELTA_CHUNK_ROWS + 300       # three chunks, the last one partial


class Fed:
    def __init__(self, sql: str):
        self.comp = compile_sql(sql, mode="batch")
        self.engine = self.comp.engine("llvm")
        self.oracle = Oracle(list(self.engine.relations.values()))

    def apply(self, b: Batch) -> None:
        self.engine.apply(b)
        self.oracle.apply(b)

    def assert_views_match_duckdb(self) -> None:
        for q, sql in zip(self.comp.queries, self.comp.oracle_sql):
            diffs = compare_results(self.engine.result(q.name), self.oracle.query(sql), len(q.key_columns))
            assert not diffs, diffs

    def close(self) -> None:
        self.engine.close()
        self.oracle.close()


@pytest.fixture
def fed(request):
    made = []

    def make(sql):
        made.append(Fed(sql))
        return made[-1]
    yield make
    for f in made:
        f.close()


def _stream(seed: int):
    """Two long batches: inserts, then a mix of deletes of the first batch's rows and new rows."""
    rng = random.Random(seed)
    first = [(rng.randint(-50, 50), rng.randint(0, 40)) for _ in range(ROWS)]
    held = Counter(first)
    second, signs = [], []
    for _ in range(ROWS):
        row = rng.choice(first)
        if rng.random() < 0.4 and held[row] > 0:
            held[row] -= 1
            second.append(row)
            signs.append(-1)
        else:
            second.append((rng.randint(-50, 50), rng.randint(0, 40)))
            signs.append(1)
    return [Batch.from_rows("R", (INT, INT), first), Batch.from_rows("R", (INT, INT), second, signs)]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_batches_longer_than_a_chunk_equal_duckdb(fed, name):
    f = fed(QUERIES[name])
    for b in _stream(seed=len(name)):
        f.apply(b)
        f.assert_views_match_duckdb()


def test_overflow_in_the_last_chunk_rolls_back_the_whole_batch(fed):
    f = fed(QUERIES["grouped sum"])
    f.apply(Batch.from_rows("R", (INT, INT), [(1 << 62, 7), (3, 1)]))
    rows = [(i % 90, i % 13) for i in range(ROWS - 1)] + [(1 << 62, 7)]    # 2^63 in the last chunk
    with pytest.raises(IntegerOverflowError):
        f.engine.apply(Batch.from_rows("R", (INT, INT), rows))
    f.assert_views_match_duckdb()                       # as before the batch: no chunk of it kept
    f.apply(Batch.from_rows("R", (INT, INT), rows[:-1]))
    f.assert_views_match_duckdb()


def test_non_atomic_engine_overflow_says_so_and_closes(tmp_path):
    """atomic=False (what `--run` builds: it stops at the first error): no undo records for
    checked integers; an overflow is still an IntegerOverflowError, which says the batch was
    applied in part, and the engine refuses to be read or fed after it."""
    comp = compile_sql(QUERIES["grouped sum"], mode="tuple")
    engine = comp.engine("llvm", atomic=False)
    oracle = Oracle(list(engine.relations.values()))
    good = Batch.from_rows("R", (INT, INT), [(1 << 62, 7), (3, 1), (5, 1)])
    engine.apply(good)
    oracle.apply(good)
    q = comp.queries[0]
    assert not compare_results(engine.result(q.name), oracle.query(comp.oracle_sql[0]), len(q.key_columns))
    oracle.close()
    with pytest.raises(IntegerOverflowError, match="applied in part .* engine is closed"):
        engine.apply(Batch.from_rows("R", (INT, INT), [(1, 2), (1 << 62, 7)]))
    with pytest.raises(Exception, match="closed"):
        engine.result(q.name)
    with pytest.raises(Exception, match="closed"):
        engine.apply(good)
