"""Deep and wide queries (issue 13 item 5): a scalar subquery nested 50 deep and a 5,000-way OR
through every stage, in CPU-time budgets about ten times what they measure (to catch a return
of exponential or quadratic work, not to time anything), with results equal to DuckDB."""
from __future__ import annotations

import time

import pytest

from toaster.errors import ToasterError
from toaster.pipeline import compile_sql
from toaster.testing.differential import check_compilation
from toaster.testing.generator import random_stream

HEADER = "CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"


def nested_query(depth: int) -> str:
    """SUM(A) over R where B < (COUNT of R where B < (COUNT of R where ... )), `depth` deep,
    every subquery uncorrelated."""
    inner = "SELECT COUNT(*) FROM R r0"
    for i in range(1, depth):
        inner = f"SELECT COUNT(*) FROM R r{i} WHERE r{i}.B < ({inner})"
    return HEADER + f"SELECT SUM(q.A) FROM R q WHERE q.B < ({inner});"


def wide_or_query(n: int, same_column: bool) -> str:
    """A WHERE clause OR-ing n equalities: on one column (an IN list in disguise) or alternating
    between two columns (not mutually exclusive)."""
    terms = [f"r.{'A' if same_column or i % 2 == 0 else 'B'} = {i % 7 if not same_column else i}"
             for i in range(n)]
    return HEADER + f"SELECT SUM(r.B) FROM R r WHERE {' OR '.join(terms)};"


def _stream(relations):
    return random_stream(relations, seed=3, n_batches=5, max_batch=4, deletes=True)


class _Budget:
    """Asserts that the CPU seconds spent inside the block stay below `seconds`."""

    def __init__(self, seconds: float, what: str):
        self.seconds, self.what = seconds, what

    def __enter__(self):
        self.start = time.process_time()

    def __exit__(self, *exc):
        spent = time.process_time() - self.start
        if exc[0] is None:
            assert spent < self.seconds, f"{self.what}: {spent:.1f} s CPU, budget {self.seconds} s"


@pytest.fixture(scope="module")
def deep_tuple():
    with _Budget(40, "nested 50 deep: SQL to calc"):   # measured ~1.5 s
        return compile_sql(nested_query(50), mode="tuple")


@pytest.mark.parametrize("stage, budget", [("m3", 60), ("k3", 60), ("imp", 30), ("llvm", 30)])
def test_nested_50_deep_compiles_through_every_stage(deep_tuple, stage, budget):
    with _Budget(budget, f"nested 50 deep: stage {stage}"):     # measured: m3 ~3 s, k3 ~3 s
        assert deep_tuple.stage(stage) is not None


@pytest.mark.parametrize("backend, budget", [("calc", 60), ("interp", 100), ("imp", 80), ("llvm", 60)])
def test_nested_50_deep_equals_duckdb(deep_tuple, backend, budget):
    with _Budget(budget, f"nested 50 deep on {backend}"):       # measured: 1-9 s
        report = check_compilation(deep_tuple, backend, _stream, mode="tuple")
    assert report.nonempty_checks > 0


def test_nested_50_deep_spark_source_compiles():
    comp = compile_sql(nested_query(50), mode="batch")
    with _Budget(80, "nested 50 deep: spark stage"):           # measured ~5 s
        program = comp.stage("spark", "distributed")
    compile(program.source, "<generated spark>", "exec")     # Python's 20-nested-block limit


def test_nesting_beyond_the_limit_is_refused_cleanly():
    from toaster.recursion import MAX_SUBQUERY_DEPTH
    with pytest.raises(ToasterError, match="nested"):
        compile_sql(nested_query(MAX_SUBQUERY_DEPTH + 1))


@pytest.fixture(scope="module", params=[True, False], ids=["one_column", "two_columns"])
def wide(request):
    with _Budget(60, "5,000-way OR: SQL to calc"):           # measured ~5 s
        return compile_sql(wide_or_query(5000, request.param), mode="tuple")


@pytest.mark.parametrize("stage, budget", [("m3", 60), ("k3", 100), ("imp", 30), ("llvm", 60)])
def test_wide_or_compiles_through_every_stage(wide, stage, budget):
    with _Budget(budget, f"5,000-way OR: stage {stage}"):      # measured: 1-8 s
        assert wide.stage(stage) is not None


@pytest.mark.parametrize("backend, budget", [("calc", 100), ("imp", 100)])
def test_wide_or_equals_duckdb(wide, backend, budget):
    with _Budget(budget, f"5,000-way OR on {backend}"):         # measured: 5-9 s
        report = check_compilation(wide, backend, _stream, mode="tuple")
    assert report.nonempty_checks > 0


def test_wide_or_spark_source_compiles():
    comp = compile_sql(wide_or_query(5000, False), mode="batch")
    with _Budget(150, "5,000-way OR: spark stage"):            # measured ~4-13 s
        program = comp.stage("spark", "distributed")
    compile(program.source, "<generated spark>", "exec")


def test_pygen_flattening_keeps_the_meaning(monkeypatch):
    """The generated PySpark code's deep blocks become local functions: the same function
    flattened at a low limit computes the same result (no Spark needed)."""
    import ast
    import itertools
    from toaster.backends.spark import pygen
    src = ("def f(m_X):\n"
           "    acc = 0\n"
           "    for a in range(3):\n"
           "        b_acc = 0\n"
           "        for b in range(4):\n"
           "            if (a + b) % 2 == 0:\n"
           "                for c in range(2):\n"
           "                    b_acc = b_acc + a * b + c\n"
           "                    m_X[(a, c)] = m_X.get((a, c), 0) + 1\n"
           "        acc = acc + b_acc\n"
           "    return acc\n")
    expected_maps: dict = {}
    ns: dict = {}
    exec(compile(src, "<plain>", "exec"), ns)
    expected = ns["f"](expected_maps)
    for limit in (1, 2, 3):
        monkeypatch.setattr(pygen, "_MAX_NESTED_BLOCKS", limit)
        tree = ast.parse(src)
        pygen._flatten_nesting(tree.body[0], itertools.count(1))
        flat = ast.unparse(ast.fix_missing_locations(tree))
        assert "_nested_block" in flat
        maps: dict = {}
        ns = {}
        exec(compile(flat, "<flat>", "exec"), ns)
        assert (ns["f"](maps), maps) == (expected, expected_maps), flat
