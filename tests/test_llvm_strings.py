"""LLVM backend: string functions (LIKE, SUBSTRING, REGEXP_MATCH, casts) and string ordering,
computed natively from per-string-id tables (toaster/backends/llvm/strings.py), checked against
the interp engine and DuckDB on streams that keep bringing new strings."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from toaster.errors import InputError
from toaster.imperative.ir import BinOp, Call, Cast, If, MapAdd, MapSpec
from toaster.runtime.batch import Batch
from toaster.types import INT, DATE, STRING, BOOL
from toaster.backends.llvm import LLVMEngine, generate_llvm

from test_llvm_backend import _one_trigger, lit, v

STRING_SQL = """
    CREATE STREAM P(NAME string, K int); CREATE STREAM Q(NAME string, S string, D string);
    SELECT P.K, COUNT(*) AS n FROM P WHERE P.NAME LIKE 'a_b%' OR P.NAME LIKE '_' GROUP BY P.K;
    SELECT P.K, SUM(CASE WHEN P.NAME LIKE '%.*%' THEN 1 ELSE 0 END) AS a, SUM(CASE WHEN P.NAME LIKE '(%'
        THEN 1 ELSE 0 END) AS b, SUM(CASE WHEN P.NAME NOT LIKE '%]' THEN 1 ELSE 0 END) AS c,
        SUM(CASE WHEN P.NAME LIKE '_*%' THEN 1 ELSE 0 END) AS d, SUM(CASE WHEN P.NAME LIKE '%b%a'
        THEN 1 ELSE 0 END) AS e, SUM(CASE WHEN P.NAME LIKE 'ab' THEN 1 ELSE 0 END) AS f FROM P GROUP BY P.K;
    SELECT SUBSTRING(P.NAME, 1, 2) AS s, SUBSTRING(SUBSTRING(P.NAME, 1, 3), 1, 1) AS t, SUM(P.K) AS k
        FROM P GROUP BY SUBSTRING(P.NAME, 1, 2), SUBSTRING(SUBSTRING(P.NAME, 1, 3), 1, 1);
    SELECT P.K, SUM(REGEXP_MATCH('b[.]?$', P.NAME)) AS r FROM P GROUP BY P.K;
    SELECT P.NAME, SUM(P.K) AS k FROM P WHERE P.NAME >= 'b' AND P.NAME < 'c.' GROUP BY P.NAME;
    SELECT P.K, COUNT(*) AS n FROM P, Q WHERE P.NAME < Q.NAME AND Q.NAME <= 'b.' AND Q.NAME > P.NAME GROUP BY P.K;
    SELECT Q.NAME, SUM(CAST_INT(Q.S)) AS i, SUM(CAST_FLOAT(Q.S)) AS f FROM Q
        WHERE CAST_DATE(Q.D) < DATE('1996-01-01') GROUP BY Q.NAME;"""


def growing_string_stream(rels, seed, n_batches=40, size=10):
    """Batches that keep bringing new strings (over 200 with the substrings: every table is
    reallocated at least twice), with deletions of present rows; names mix regex metacharacters
    and non-ASCII characters."""
    rng = random.Random(seed)
    names = sorted({"".join(rng.choice("aabb.*(]_%é😀") for _ in range(rng.randint(0, 5))) for _ in range(400)})
    rng.shuffle(names)
    numbers = [f"{rng.choice(['', ' ', '+', '-'])}{rng.randint(0, 99)}{rng.choice(['', '.5', 'e1'])}"
               for _ in range(60)]
    dates = [f"{rng.choice(['', ' '])}{rng.choice([1995, 1996])}-{rng.randint(1, 12)}-{rng.randint(1, 28):02d}"
             for _ in range(60)]
    present = {r.name: [] for r in rels}
    for i in range(n_batches):
        rel = rels[i % len(rels)]
        rows, signs = [], []
        for _ in range(size):
            held = present[rel.name]
            if held and rng.random() < 0.3:
                row, sign = held.pop(rng.randrange(len(held))), -1
            else:
                name = rng.choice(names[:8 * (i + 1)])
                row = (name, rng.randint(0, 3)) if rel.name == "P" else (name, rng.choice(numbers), rng.choice(dates))
                held.append(row)
                sign = 1
            rows.append(row)
            signs.append(sign)
        yield Batch.from_rows(rel.name, rel.types, rows, signs)


def assert_same_results(native, interp):
    for got_t, want_t in zip(native.results(), interp.results(), strict=True):
        assert len(got_t.rows) == len(want_t.rows), (got_t.name, got_t.rows, want_t.rows)
        for gr, wr in zip(got_t.rows, want_t.rows):
            assert all(g == w if not isinstance(w, float) else math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-9)
                       for g, w in zip(gr, wr)), (got_t.name, gr, wr)


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_string_functions_and_order_against_interp_engine(mode):
    from toaster.pipeline import compile_sql
    comp = compile_sql(STRING_SQL, mode=mode)
    tables = {t.function for t in comp.stage("llvm").string_tables}
    assert tables == {"like", "substring", "regexp_match", "rank", "cast_int", "cast_float", "cast_date"}
    native, interp = comp.engine("llvm"), comp.engine("interp")
    nonempty = set()
    for batch in growing_string_stream([native.relations["P"], native.relations["Q"]], seed=5):
        native.apply(batch)
        interp.apply(batch)
        assert_same_results(native, interp)
        nonempty |= {r.name for r in interp.results() if r.rows}
    assert len(nonempty) == 7, nonempty
    assert len(native._pool.strings) > 200 and len(native._pool._ranks.rank) > 200


@pytest.mark.parametrize("mode", ["tuple", "batch"])
def test_string_functions_and_order_against_duckdb(mode):
    from toaster.pipeline import compile_sql
    from toaster.testing import check_compilation
    sql = STRING_SQL[:STRING_SQL.index("SELECT Q.NAME")]    # DuckDB parses casts of strings differently
    comp = compile_sql(sql, mode=mode)
    report = check_compilation(comp, "llvm", lambda rels: list(growing_string_stream(rels, seed=8)), mode=mode)
    assert report.nonempty_checks >= 10


def test_failing_cast_of_a_string_is_an_input_error():
    from toaster.pipeline import compile_sql
    comp = compile_sql("CREATE STREAM Q(NAME string, S string, D string);"
                       "SELECT COUNT(*) AS n FROM Q WHERE CAST_DATE(Q.D) < DATE('1996-01-01');")
    native = comp.engine("llvm")
    native.insert("Q", ("a", "1", "1995-02-03"))
    native.insert("Q", ("1995-13-03", "1", "1995-02-03"))    # only D is cast: NAME is no error
    with pytest.raises(InputError, match=r"cast_date\('1995-13-03'\) failed \(ValueError: bad date"):
        native.insert("Q", ("b", "1", "1995-13-03"))


def test_string_ranks_follow_python_order_as_strings_arrive():
    import ctypes
    from toaster.backends.llvm.strings import StringPool, StringTable, RANK, RANK_SYMBOL
    cells = {}

    def address_of(symbol):
        cells[symbol] = ctypes.c_void_p()
        return ctypes.addressof(cells[symbol])
    pool = StringPool(("m", ""), (StringTable(RANK_SYMBOL, RANK, (None,), 0, INT, True),), address_of)
    rng = random.Random(4)
    for size in (1, 3, 200, 5, 1, 40, 2):       # both the full sort and the incremental merge
        pool.encode(np.array(["".join(rng.choice("ab\x00é😀\uffff") for _ in range(rng.randint(0, 4)))
                              for _ in range(size)], dtype=object))
        pool.sync()
        rank = pool._ranks.rank[:len(pool.strings)]
        assert cells[RANK_SYMBOL].value == pool._ranks.rank.ctypes.data
        assert [pool.strings[i] for i in np.argsort(rank)] == sorted(pool.strings)


def test_string_calls_on_literals_fold_unless_they_fail():
    s = lambda x: lit(x, STRING)    # noqa: E731
    maps = (MapSpec("OUT", (STRING,), INT),)
    body = (MapAdd("OUT", (Call("substring", (s("hello"), lit(1), lit(2)), STRING),),
                   Call("like", (s("ab"), s("a_")), INT)),
            If(BinOp("<", v("k"), lit(0), BOOL),        # reached only for negative k
               (MapAdd("OUT", (s("x"),), Cast(INT, Call("cast_date", (s("2001-02-30x"),), DATE))),)))
    prog = _one_trigger(body, maps=maps)
    module = generate_llvm(prog)
    assert [t.function for t in module.string_tables] == ["cast_date"] and "el" in module.strings
    native = LLVMEngine(module)
    native.insert("P", ("n", 19950101, 1.0, 3))
    assert native.read_map("OUT") == {("el",): 1}
    with pytest.raises(InputError, match=r"cast_date\('2001-02-30x'\) failed"):
        native.insert("P", ("n", 19950101, 1.0, -1))
