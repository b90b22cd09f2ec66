"""The PySpark backend end to end: generated programs run on the shared local Spark session
and are compared, map by map after every batch, with the reference InterpEngine, and their
results with DuckDB. Kept small: every Spark job costs ~0.1-1 s."""
from __future__ import annotations

import ast

import pytest

from toaster.backends.interp import InterpEngine
from toaster.backends.spark.engine import SparkEngine
from toaster.errors import InputError
from toaster.pipeline import compile_sql, print_stage
from toaster.runtime.batch import Batch
from toaster.testing import Oracle, compare_results, random_stream

from test_dist import GROUP_SUM, JOIN3, SELF_JOIN  # the same three queries as the dist-stage tests


def _run(sql, spark, *, n_batches, seed, **engine_kw):
    comp = compile_sql(sql, mode="batch")
    engine = SparkEngine(comp.stage("spark"), spark=spark, **engine_kw)
    m3 = comp.stage("m3", "distributed")       # the batch program the distributed branch runs
    ref = InterpEngine(m3)
    oracle = Oracle(comp.m3.relations)
    batches = random_stream(comp.m3.relations, seed=seed, n_batches=n_batches, max_batch=8,
                            min_batch=4, deletes=True)
    assert any((b.signs < 0).any() for b in batches), "the stream should delete"
    nonzero = 0
    try:
        for batch in batches:
            engine.apply(batch)
            ref.apply(batch)
            oracle.apply(batch)
            for m in m3.maps:
                got = engine.read_map(m.name)
                assert got == ref.read_map(m.name), m.name
                nonzero += bool(got)
        for q, sql_q in zip(comp.queries, comp.oracle_sql):
            diffs = compare_results(engine.result(q.name), oracle.query(sql_q), len(q.key_columns))
            assert not diffs, diffs
    finally:
        engine.close()
        oracle.close()
    assert nonzero, "the test compared only empty maps"
    return engine


@pytest.mark.parametrize("sql, n_batches", [(GROUP_SUM, 3), (JOIN3, 5), (SELF_JOIN, 3)],
                         ids=["group_sum_filter", "join3_sum", "self_join_count"])
def test_spark_matches_interp_and_duckdb(spark, sql, n_batches):
    _run(sql, spark, n_batches=n_batches, seed=1, partitions=3)


def test_state_survives_checkpoints_and_other_partition_counts(spark):
    _run(SELF_JOIN, spark, n_batches=3, seed=3, checkpoint_every=1, partitions=3)


def test_engine_from_m3_with_partitioning_override_and_program_file(spark, tmp_path):
    comp = compile_sql(GROUP_SUM, mode="batch")
    m3 = comp.stage("m3", "distributed")
    engine = SparkEngine(m3, spark=spark, partitioning={m.name: "local" for m in m3.maps})
    ref = InterpEngine(m3)
    try:
        b = Batch.from_rows("R", engine.relations["R"].types, [(3, 1), (4, 1), (5, 2), (1, 2)], [1, 1, 1, 1])
        d = Batch.from_rows("R", engine.relations["R"].types, [(4, 1), (9, 9)], [-1, 1])
        for x in (b, d):
            engine.apply(x)
            ref.apply(x)
        assert engine.results() == ref.results()
        with pytest.raises(InputError):     # rejected whole, views unchanged
            engine.apply(Batch.from_rows("R", engine.relations["R"].types, [(1, 1)], [2]))
        assert engine.results() == ref.results()
        path = tmp_path / "prog.py"
        engine.write_program(str(path))
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.ClassDef) and n.name == "Program" for n in tree.body)
    finally:
        engine.close()


def test_pipeline_engine_and_dump(spark):
    comp = compile_sql(GROUP_SUM, mode="batch")
    assert "ON BATCH R" in print_stage("dist", comp.stage("dist"))
    assert "class Program" in print_stage("spark", comp.stage("spark"))
    engine = comp.engine("spark")
    try:
        engine.insert("R", (5, 1))
        engine.insert("R", (7, 1))
        engine.delete("R", (5, 1))
        assert engine.results() == InterpEngine_results(comp, [((5, 1), 1), ((7, 1), 1), ((5, 1), -1)])
    finally:
        engine.close()


def InterpEngine_results(comp, ops):
    ref = InterpEngine(comp.m3)
    for row, sign in ops:
        (ref.insert if sign > 0 else ref.delete)("R", row)
    return ref.results()


_START_THEN_RETRY = r"""
import os, sys
from toaster.backends.spark.session import get_spark, _spark_jvms
from toaster.errors import EngineStartError
os.environ["TOASTER_SPARK_START_TIMEOUT"] = "0.5"
try:
    get_spark()
    sys.exit("started within 0.5 s: the time-out was not exercised")
except EngineStartError as e:
    print("refused:", e)
print("left:", _spark_jvms())
del os.environ["TOASTER_SPARK_START_TIMEOUT"]
print("sum:", get_spark().sparkContext.parallelize(range(10)).sum())
"""


def test_a_spark_start_that_times_out_leaves_no_jvm_and_a_later_start_works():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("TOASTER_SPARK_START_TIMEOUT", None)
    proc = subprocess.run([sys.executable, "-c", _START_THEN_RETRY], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("refused: error: Spark did not start within 0.5 s"), lines
    assert lines[1] == "left: []" and lines[2] == "sum: 45", lines


# ------------------------------------------------ block code: pygen = the imp interpreter
# The spark backend's block functions are pygen's Python for imperative statements of the shared
# lowering. Here pygen runs whole batch triggers of the local branch's imp program (same passes,
# same node kinds) beside the imp interpreter, without Spark: every view equal after every batch.

from toaster.backends.spark import pygen  # noqa: E402
from toaster.imperative.interpreter import ImpEngine  # noqa: E402
from toaster.errors import IntegerOverflowError, UnsupportedError  # noqa: E402
from test_query_suite import QUERIES, compiled, suite_stream  # noqa: E402


class PyGenEngine(ImpEngine):
    """ImpEngine whose triggers run as pygen's Python (what a spark block function is)."""
    backend = "pygen"

    def __init__(self, program):
        from toaster.backends.spark import worker
        names = sorted(m.name for m in program.maps)
        scope = {n: getattr(worker, n) for n in ("ieee_div", "scalar_call", "scalar_cast", "index_of",
                                                  "int64_overflow", "INT64_MIN", "INT64_MAX")}
        self.functions = {}
        for t in program.triggers:
            fn = pygen.block_function("trigger", names, [], t.body, None)
            exec(compile(ast.fix_missing_locations(ast.Module([fn], [])), t.name, "exec"), scope)
            self.functions[t.name] = (scope["trigger"], names)
        super().__init__(program)

    def _run(self, trig, env: dict) -> None:
        from toaster.backends.spark.worker import OVERFLOW_MARK
        from toaster.runtime.int64 import overflow_error
        fn, names = self.functions[trig.name]
        try:
            fn(*(self.maps[n] for n in names))
        except OverflowError as e:
            if OVERFLOW_MARK not in str(e):
                raise
            raise overflow_error(str(e).split("[", 1)[1][:-1], self.queries, self.program) from None


PYGEN_QUERIES = ["tpch/q02", "tpch/q04", "tpch/q13", "tpch/q15", "tpch/q16", "tpch/q20", "tpch/q21", "tpch/q22",
                 "features/agg_min_max_float_date", "features/agg_min_max_group", "features/date_part",
                 "features/date_extract", "features/func_substring", "features/func_casts", "features/func_math",
                 "features/func_regexp_match", "features/like_underscore", "features/like_not",
                 "features/null_join", "features/outer_right_full_join", "features/initial_values",
                 "features/combo_strings_dates", "finance/vwap"]


@pytest.mark.parametrize("name", PYGEN_QUERIES)
def test_pygen_runs_the_shared_lowering_as_the_imp_interpreter_does(name):
    path = QUERIES / f"{name}.sql"
    comp = compiled(path, "batch")
    program = comp.stage("imp")
    ref, got = ImpEngine(program), PyGenEngine(program)
    views = [m.name for m in program.maps if m.kind == "view"]
    nonzero = 0
    for batch in suite_stream(path, compiled(path, "tuple"), list(ref.relations.values())):
        ref.apply(batch)
        got.apply(batch)
        for v in views:
            assert got.read_map(v) == ref.read_map(v), (name, v)
            nonzero += bool(ref.read_map(v))
    assert nonzero, "only empty maps compared"


@pytest.mark.parametrize("sql", ["SELECT SUM(A * B) AS total FROM R;",          # a product out of range
                                 "SELECT B, SUM(A) AS total FROM R GROUP BY B;",  # a sum out of range
                                 "SELECT COUNT(*) AS n FROM R WHERE A * B > 0;"])       # only a product
def test_pygen_integer_overflow_is_the_interpreters(sql):
    from test_integer_overflow import BIG, SCHEMA, batch
    program = compile_sql(SCHEMA + sql, mode="batch").stage("imp")
    ref, got = ImpEngine(program), PyGenEngine(program)
    ok, bad = batch([(3, 2), (5, 1)]), batch([(BIG, 2), (BIG, 2)])
    for engine in (ref, got):
        engine.apply(ok)
    errors = []
    for engine in (ref, got):
        with pytest.raises(IntegerOverflowError) as e:
            engine.apply(bad)
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    for engine in (ref, got):
        engine.apply(ok)
    assert got.results() == ref.results()


def test_spark_blocks_are_the_shared_passes_output():
    """Each block function is its BlockCode's imperative code (the docstring prints it), and the
    block code is what m3_to_k3 | k3_fuse | k3_cse | k3_to_imp | imp_verify give for its M3."""
    from toaster.backends.spark.blocks import BLOCK_PASSES
    from toaster.imperative.printer import print_stmts
    from toaster.passes import run_spec
    comp = compile_sql((QUERIES / "tpch" / "q04.sql").read_text(), mode="batch",
                       source_file="tests/queries/tpch/q04.sql", base_dir=str(QUERIES.parent.parent))
    spark = comp.stage("spark")
    assert {b.mode for b in spark.blocks} == {"local", "dist"}
    tree = ast.parse(spark.source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert set(functions) == {b.name for b in spark.blocks}
    for b in spark.blocks:
        assert run_spec("|".join(BLOCK_PASSES), b.m3) == b.imp
        doc = ast.get_docstring(functions[b.name], clean=False)
        assert doc == "\n    ".join(print_stmts(b.body, maps={m.name: m for m in b.imp.maps}))
        assert str(b).startswith(f"-- {b.name} (ON BATCH ")


def test_block_passes_option():
    comp = compile_sql(GROUP_SUM, mode="batch", pass_options={"dist_to_spark": {"block_passes": "m3_to_k3,k3_to_imp"}})
    assert "def dist_block_" in comp.stage("spark").source
    with pytest.raises(UnsupportedError, match="block_passes"):
        compile_sql(GROUP_SUM, mode="batch",
                    pass_options={"dist_to_spark": {"block_passes": "m3_to_k3,k3_fuse"}}).stage("spark")


def test_dump_blocks_prints_each_blocks_imperative_program(capsys):
    from toaster.pipeline import main
    from toaster.imperative.parser import parse_imp
    path = QUERIES / "features" / "agg_min_max_group.sql"
    assert main([str(path), "--dump-ir", "blocks", "--base-dir", str(QUERIES.parent.parent)]) == 0
    out = capsys.readouterr().out
    spark = compiled(path, "batch").stage("spark")
    assert out.count("-- local_block_") + out.count("-- dist_block_") == len(spark.blocks) > 1
    for b in spark.blocks:
        assert str(b) in out
        assert parse_imp(str(b).split("\n", 1)[1]) == b.imp     # a program the imp stage reads


def test_nested_max_runs_on_the_driver_over_gathered_maps():
    """TPC-H Q15's AggMax reads distributed maps: they are gathered, the MAX is Local."""
    from toaster.calculus import ir as C
    from toaster.dist.ir import Gather, Local, Repart, Scatter, tag_of
    from toaster.dist.parser import parse_dist
    from toaster.dist.placement import m3_to_dist

    def nodes(e, gathered=False):
        yield e, gathered
        match e:
            case Gather(q):
                yield from nodes(q, True)
            case C.Prod(fs) | C.Sum(fs):
                for f in fs:
                    yield from nodes(f, gathered)
            case C.AggSum(_, q) | C.Lift(_, q) | C.Extremum(_, _, _, q) | Repart(_, q) | Scatter(_, q):
                yield from nodes(q, gathered)

    tagged = m3_to_dist(compiled(QUERIES / "tpch" / "q15.sql", "batch").stage("m3", "distributed"))
    maps = tagged.tags()
    found = 0
    for trig in tagged.triggers:
        for block in trig.blocks:
            for item in block.items:
                for x, _ in nodes(item.stmt.rhs):
                    if isinstance(x, C.Extremum):
                        found += 1
                        assert tag_of(x, maps) == Local()
                        assert all(g or maps[n.name].tag == Local() for n, g in nodes(x.expr)
                                   if isinstance(n, C.MapRef))
    assert found
    assert parse_dist(str(tagged)) == tagged


@pytest.mark.parametrize("name", ["features/scalar_null_in_aggregate", "features/null_subqueries",
                                  "features/null_subquery_result", "tpch/q15"])
def test_no_block_reads_a_temp_made_before_a_write_of_what_it_holds(name):
    """A trigger that re-evaluates a view after updating the maps it reads must see the new
    contents: a temp (a moved copy or partial result) computed before a map was written is
    not read after that write (dist_blocks' common-temp reuse stops at the write)."""
    from toaster.dist.ir import DistStatement, Exchange, map_names
    prog = compiled(QUERIES / f"{name}.sql", "batch").stage("dist", "distributed")
    temps = {m.name for m in prog.maps if m.kind == "temp"}
    checked = 0
    for trig in prog.triggers:
        made, deps, written_at = {}, {}, {}
        for step, item in enumerate(i for b in trig.blocks for i in b.items):
            if isinstance(item, Exchange):
                reads, target = {item.source}, item.target
            else:
                reads, target = map_names(item.stmt.rhs), item.stmt.target
            for r in reads & temps:
                stale = {m for m in deps.get(r, ()) if written_at.get(m, -1) > made[r]}
                assert not stale, f"{target} reads {r}, made before {sorted(stale)} were written"
                checked += 1
            if target in temps:
                made[target] = step
                deps[target] = set().union(*(deps.get(r, {r}) for r in reads)) if reads else set()
            else:
                written_at[target] = step
    assert checked


def test_block_code_is_what_imp_to_llvm_compiles():
    """Ready for native executors: every block's imperative program goes through imp_to_llvm
    (TPC-H Q22's blocks run natively in test_query_suite's spark subset)."""
    from toaster.passes import Options, get_pass
    from toaster.pipeline import load_pass_modules
    load_pass_modules()
    to_llvm = get_pass("imp_to_llvm")
    for name in ("tpch/q02", "features/func_substring"):
        for b in compiled(QUERIES / f"{name}.sql", "batch").stage("spark").blocks:
            assert "define" in str(to_llvm.run(b.imp, Options("batch"))), b.name
