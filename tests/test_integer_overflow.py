"""One integer semantics on every engine: INT is 64-bit, and a batch that takes an integer value
out of [-2^63, 2^63) fails whole with IntegerOverflowError naming the view; the views stay as
DuckDB computes them on the stream before that batch, and later batches still apply."""
from __future__ import annotations

import dataclasses

import pytest

from toaster.errors import IntegerOverflowError
from toaster.pipeline import compile_sql, main
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results
from toaster.types import INT

BIG = 1 << 62            # two of them make 2^63, one past the largest BIGINT
ENGINES = ("calc", "interp", "k3", "imp", "llvm")
SCHEMA = "CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
GROUPED_SUM = SCHEMA + "SELECT B, SUM(A) AS total FROM R GROUP BY B;"
PRODUCT_SUM = SCHEMA + "SELECT SUM(A * B) AS total FROM R;"


def batch(rows, signs=None) -> Batch:
    return Batch.from_rows("R", (INT, INT), rows, signs)


class Fed:
    """An engine and the DuckDB oracle, fed the same accepted batches."""

    def __init__(self, sql: str, backend: str, mode: str):
        self.comp = compile_sql(sql, mode=mode)
        self.engine = self.comp.engine(backend)
        self.oracle = Oracle(list(self.engine.relations.values()))

    def apply(self, b: Batch) -> None:
        self.engine.apply(b)
        self.oracle.apply(b)

    def oracle_after(self, b: Batch) -> list:
        """DuckDB's rows of the first query if `b` were applied too (the oracle is left as it was)."""
        self.oracle.apply(b)
        try:
            return self.oracle.query(self.comp.oracle_sql[0])
        finally:
            self.oracle.apply(dataclasses.replace(b, signs=-b.signs))

    def assert_views_match_duckdb(self) -> None:
        for q, sql in zip(self.comp.queries, self.comp.oracle_sql):
            expected = self.oracle.query(sql)
            assert expected, "a vacuous comparison"
            diffs = compare_results(self.engine.result(q.name), expected, len(q.key_columns))
            assert not diffs, diffs

    def close(self) -> None:
        self.engine.close()
        self.oracle.close()


@pytest.fixture
def fed(request):
    made = []

    def make(sql, backend, mode="tuple"):
        made.append(Fed(sql, backend, mode))
        return made[-1]
    yield make
    for f in made:
        f.close()


def out_of_range(rows) -> bool:
    return any(isinstance(v, int) and not -2**63 <= v < 2**63 for r in rows for v in r)


@pytest.mark.parametrize("mode", ["tuple", "batch"])
@pytest.mark.parametrize("backend", ENGINES)
def test_sum_past_int64_fails_the_batch_and_keeps_the_views(fed, backend, mode):
    f = fed(GROUPED_SUM, backend, mode)
    f.apply(batch([(BIG, 1), (5, 2), (BIG - 1, 1)]))           # 2^63 - 1: the largest value
    f.assert_views_match_duckdb()
    bad = batch([(7, 2), (1, 1), (3, 3)])
    assert out_of_range(f.oracle_after(bad))                    # DuckDB's HUGEINT says 2^63
    with pytest.raises(IntegerOverflowError) as err:
        f.engine.apply(bad)
    view = f.comp.queries[0].name
    assert f"view {view} " in str(err.value) and "the batch was not applied" in str(err.value)
    assert str(err.value).startswith("integer overflow: ")
    f.assert_views_match_duckdb()                               # as before the failed batch
    f.apply(batch([(-BIG, 1), (4, 2), (6, 3)]))                 # a later good batch applies
    f.assert_views_match_duckdb()


@pytest.mark.parametrize("backend", ENGINES)
def test_negative_overflow_and_deletes(fed, backend):
    f = fed(GROUPED_SUM, backend)
    f.apply(batch([(-BIG, 1), (-BIG, 1), (9, 2)]))               # -2^63: still in range
    f.assert_views_match_duckdb()
    with pytest.raises(IntegerOverflowError):
        f.engine.apply(batch([(3, 2), (1, 1)], [1, -1]))      # deleting 1 takes it to -2^63 - 1
    f.assert_views_match_duckdb()


@pytest.mark.parametrize("backend", ENGINES)
def test_product_overflow(fed, backend):
    f = fed(PRODUCT_SUM, backend)
    f.apply(batch([(1 << 31, 1 << 31), (3, 4)]))
    f.assert_views_match_duckdb()
    bad = batch([(5, 6), (1 << 32, 1 << 32)])                  # 2^64 as one product
    with pytest.raises(IntegerOverflowError, match=f"view {f.comp.queries[0].name} "):
        f.engine.apply(bad)
    f.assert_views_match_duckdb()
    f.apply(batch([(2, 2)]))
    f.assert_views_match_duckdb()


@pytest.mark.parametrize("backend", ENGINES)
def test_a_sum_that_leaves_the_range_and_comes_back_in_one_batch(fed, backend):
    """Single-tuple triggers store each event's sum: 2^62 + 2^62 is out of range at the second
    event, although the third brings the sum back (64-bit semantics per operation, as DuckDB's
    BIGINT `+`). calc re-evaluates once per batch: it sees only the batch's net result."""
    f = fed(GROUPED_SUM, backend, "tuple")
    f.apply(batch([(1, 1)]))
    bad = batch([(BIG, 1), (BIG, 1), (-BIG, 1)])
    assert not out_of_range(f.oracle_after(bad))
    if backend == "calc":
        f.apply(bad)
    else:
        with pytest.raises(IntegerOverflowError):
            f.engine.apply(bad)
    f.assert_views_match_duckdb()


@pytest.mark.parametrize("backend", ["interp", "k3", "imp", "llvm"])
def test_batch_triggers_give_duckdbs_result_or_one_error(fed, backend):
    """Batch triggers sum a batch's net delta in their own order: a partial sum out of range
    may fail the batch (k3, imp, llvm) or not (interp sums exactly); either way the views equal
    DuckDB's, before or after the batch."""
    f = fed(GROUPED_SUM, backend, "batch")
    f.apply(batch([(1, 1)]))
    bad = batch([(BIG, 1), (BIG, 1), (-BIG, 1)])
    try:
        f.apply(bad)
    except IntegerOverflowError:
        pass
    f.assert_views_match_duckdb()


def test_llvm_and_imp_agree_on_intermediate_overflow(fed):
    """The imp interpreter checks the same `+ - *` the native code does: here a product that is
    only compared (interp and calc compare the exact product, and count the row)."""
    sql = SCHEMA + "SELECT COUNT(*) AS n FROM R WHERE A * B > 0;"
    for backend in ("imp", "llvm"):
        f = fed(sql, backend)
        f.apply(batch([(2, 3)]))
        with pytest.raises(IntegerOverflowError):
            f.engine.apply(batch([(1 << 40, 1 << 40)]))       # the product overflows, the sum would not
        f.assert_views_match_duckdb()


def test_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    (tmp_path / "r.csv").write_text(f"{BIG},1\n{BIG},1\n")
    q = tmp_path / "q.sql"
    q.write_text(GROUPED_SUM)
    for backend in ("interp", "llvm"):
        assert main([str(q), "--run", "--backend", backend, "--base-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert "integer overflow: view QUERY_1 (map " in err, err


def test_spark_overflow_fails_the_batch_and_keeps_the_views(spark):
    """The generated per-partition code checks every integer it stores; a failed batch is undone
    (executor views back to their versions before it, driver views through their undo)."""
    from toaster.backends.spark.engine import SparkEngine
    sql = SCHEMA + "SELECT B, SUM(A) AS total FROM R GROUP BY B;\nSELECT COUNT(*) AS n, SUM(B) AS sb FROM R;"
    comp = compile_sql(sql, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, partitions=2, checkpoint_every=1)
    f = Fed.__new__(Fed)
    f.comp, f.engine, f.oracle = comp, engine, Oracle(list(engine.relations.values()))
    try:
        f.apply(batch([(BIG, 1), (5, 2), (BIG - 1, 1), (3, 3)]))
        f.assert_views_match_duckdb()
        with pytest.raises(IntegerOverflowError, match=f"view {comp.queries[0].name} "):
            engine.apply(batch([(7, 2), (1, 1), (2, 3)]))
        f.assert_views_match_duckdb()
        f.apply(batch([(-BIG, 1), (4, 2)]))
        f.assert_views_match_duckdb()
    finally:
        f.close()
