"""Engine.apply's O(columns) path: batches the readers mark checked are taken as they are, a
batch whose marks do not hold goes through the full check; the vectorized helpers it relies on
(one-character string codes, date tables) agree with their direct forms."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from test_input_validation import GOOD, TYPES, engine_for, state
from toaster.errors import InputError
from toaster.runtime.batch import Batch
from toaster.runtime.checks import _civil_from_days, _yyyymmdd_ok, days_to_yyyymmdd, yyyymmdd_ok
from toaster.runtime.csv_source import read_source
from toaster.runtime.string_codes import one_byte_codes

BACKENDS = ["interp", "llvm"]


@given(st.lists(st.sampled_from(["A", "N", "R", "x", "", "ab", "é", "|"]), max_size=40),
       st.integers(0, 5), st.integers(0, 5))
def test_one_byte_codes_are_the_column_or_none(values, lo, cut):
    col = pa.array(values, type=pa.string())
    col = col.slice(min(lo, len(values)), max(0, len(values) - lo - cut))
    codes = one_byte_codes(col)
    one_ascii = len(col) > 0 and all(len(v) == 1 and v.isascii() for v in col.to_pylist())
    assert (codes is not None) == one_ascii
    if codes is not None:
        assert [chr(b) for b in codes.tolist()] == col.to_pylist()


@settings(max_examples=50)
@given(st.integers(-719162, 2932896), st.integers(1, 6000), st.integers(0, 1))
def test_date_tables_agree_with_the_direct_forms(lo, span, sparse):
    rng = np.random.default_rng(lo & 0xFFFF)
    n = 5000 if not sparse else 9000
    days = rng.integers(lo, min(lo + span, 2932896) + 1, n)
    assert np.array_equal(days_to_yyyymmdd(days), _civil_from_days(days))
    v = days_to_yyyymmdd(days) + rng.integers(-40, 40, n)       # some not calendar dates
    assert np.array_equal(yyyymmdd_ok(v), _yyyymmdd_ok(v))


def reference_state(backend):
    """The views after GOOD applied as checked-by-value Python rows."""
    comp, engine = engine_for(backend)
    engine.load_table("T", [("x", 2), ("y", 3)])
    engine.apply(Batch.from_rows("R", TYPES, GOOD))
    try:
        return state(comp, engine)
    finally:
        engine.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_reader_batches_are_checked_and_give_the_same_views(tmp_path, backend):
    lines = [f"{a}|{b}|{d // 10000}-{d // 100 % 100:02d}-{d % 100:02d}|{s}" for a, b, d, s in GOOD]
    comp, engine = engine_for(backend, tmp_path, r_lines=lines)
    r = next(d for d in comp.m3.relations if d.name == "R")
    (batch,) = read_source(r)
    assert batch.checked and batch.slice(0, 2).checked and Batch.concat([batch, batch]).checked
    engine.load_table("T", [("x", 2), ("y", 3)])
    engine.apply(batch)
    got = state(comp, engine)
    engine.close()
    assert got == reference_state(backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_checked_batches_not_in_canonical_form_get_the_full_check(backend):
    a, b, d, s = (list(c) for c in zip(*GOOD))
    cols = (np.array(a), np.array(b), np.array(d), pa.array(s))
    comp, engine = engine_for(backend)
    engine.load_table("T", [("x", 2), ("y", 3)])
    # the mark promises checked values; columns not in canonical form are checked anyway
    with pytest.raises(InputError, match="sign"):
        engine.apply(Batch("R", np.array([1, 0, 1], np.int64), cols, checked=True))
    with pytest.raises(InputError, match="R.D"):
        engine.apply(Batch("R", np.ones(3, np.int8), cols[:2] + (np.array([19950230] * 3, np.int32),) + cols[3:],
                           checked=True))
    with pytest.raises(InputError, match="R.S"):
        engine.apply(Batch("R", np.ones(3, np.int8), cols[:3] + (pa.array(["x", None, "y"]),), checked=True))
    # other widths are converted as for any batch
    engine.apply(Batch("R", np.ones(3, np.int64), (np.array(a, np.int32),) + cols[1:], checked=True))
    got = state(comp, engine)
    engine.close()
    assert got == reference_state(backend)


def test_llvm_one_character_strings_give_the_views_of_python_rows():
    rows = [(i, 1.5, 19950101 + i % 20, "xyxxy"[i % 5]) for i in range(40)]
    want = None
    for backend, make in (("interp", lambda: Batch.from_rows("R", TYPES, rows)),
                          ("llvm", lambda: Batch.from_columns("R", [np.array([r[j] for r in rows]) for j in range(3)]
                                                              + [pa.chunked_array([[r[3] for r in rows[:7]],
                                                                                   [r[3] for r in rows[7:]]])]))):
        comp, engine = engine_for(backend)
        engine.load_table("T", [("x", 2), ("y", 3)])
        engine.apply(make())
        got = state(comp, engine)
        engine.close()
        if want is None:
            want = got
        assert got == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_many_takes_checked_batches_and_rejects_a_bad_one_whole(tmp_path, backend):
    lines = [f"{a}|{b}|{d // 10000}-{d // 100 % 100:02d}-{d % 100:02d}|{s}" for a, b, d, s in GOOD]
    comp, engine = engine_for(backend, tmp_path, r_lines=lines)
    r = next(d for d in comp.m3.relations if d.name == "R")
    (batch,) = read_source(r)
    engine.load_table("T", [("x", 2), ("y", 3)])
    before = state(comp, engine)
    bad = Batch("R", np.ones(len(batch), np.int8), batch.columns[:3] + (pa.array([None] * len(batch), pa.string()),),
                checked=True)
    with pytest.raises(InputError, match="R.S"):
        engine.apply_many([batch, bad])
    assert state(comp, engine) == before
    engine.apply_many([batch.slice(0, 1), batch.slice(1, len(batch))])
    got = state(comp, engine)
    engine.close()
    assert got == reference_state(backend)


@pytest.mark.parametrize("sizes", [(1, 3, 64), (65, 2, 300, 64), (200, 1)])
def test_llvm_small_and_large_string_columns_encode_alike(sizes):
    """Small string columns take a per-value dictionary lookup, larger ones Arrow's hash: both
    intern the same strings, so grouping by the string gives the interpreter's groups."""
    import random
    from toaster.pipeline import compile_sql
    rng = random.Random(sum(sizes))
    words = [f"w{i}" for i in range(150)] + ["", "é", "x|y"]
    batches = [[(rng.randrange(-5, 5), rng.choice(words)) for _ in range(n)] for n in sizes]
    comp = compile_sql("CREATE STREAM R(A int, S string);\nSELECT S, COUNT(*), SUM(A) FROM R GROUP BY S;",
                       mode="batch")
    want = None
    for backend in ("interp", "llvm"):
        engine = comp.engine(backend)
        for rows in batches:
            engine.apply(Batch.from_columns("R", [np.array([r[0] for r in rows]), pa.array([r[1] for r in rows])]))
        got = sorted(engine.result("QUERY_1").rows)
        engine.close()
        want = got if want is None else want
        assert got == want and len(got) > 1


@pytest.mark.parametrize("kind", ["one byte", "few", "many", "nulls elsewhere", "not ascii"])
def test_string_slices_encode_through_their_parent_as_on_their_own(kind):
    """StringPool encodes a slice of a larger Arrow column through the whole column's ids
    (once per parent): every slice gives the ids of its own strings, also after a collection
    freed ids and across parents with many distinct strings (encoded slice by slice)."""
    import ctypes
    from toaster.backends.llvm.strings import StringPool
    rng = np.random.default_rng(7)
    n = 6000     # "many": more distinct strings than a parent is encoded whole with
    words = {"one byte": list("AFNOR"), "few": ["MAIL", "SHIP", "AIR", "TRUCK", ""],
             "many": [f"w{i}" for i in range(100000)], "nulls elsewhere": ["x", "yy", None],
             "not ascii": ["A", "é", "N"]}[kind]
    values = [words[i] for i in rng.integers(0, len(words), n)]
    if kind == "nulls elsewhere":
        values[:10] = [None] * 10
        values = [v if v is not None or i < 10 else "z" for i, v in enumerate(values)]
    parent = pa.array(values, type=pa.string())
    cells = {}
    pool = StringPool(("MAIL",), (), lambda s: ctypes.addressof(cells.setdefault(s, ctypes.c_void_p())))
    pool.collect_min = 64
    for start, size in ((10, 1000), (1010, 7), (5990, 10), (500, 600), (10, 1)):
        col = parent.slice(start, size)
        ids = pool.encode(col)
        assert [pool.strings[i] for i in ids.tolist()] == col.to_pylist()
        encoded_whole = any(v is not None for _, v in pool._parents.values())
        assert encoded_whole == (kind != "many")
        pool.maybe_collect(lambda: [ids])       # only this batch's strings stay


def test_llvm_batches_sliced_from_chunked_string_columns_agree_with_interp():
    """Checked batches whose string columns are slices (one-chunk and two-chunk ChunkedArrays)
    of larger columns -- one character, few and many distinct strings -- give the interpreter's
    views on the llvm engine (the per-parent string ids of StringPool._encode_slice)."""
    from toaster.pipeline import compile_sql
    sql = ("CREATE STREAM S(F string, M string, W string, V int);"
           "SELECT F, M, COUNT(*) AS n, SUM(S.V) AS v FROM S GROUP BY F, M;"
           "SELECT W, SUM(S.V) AS v FROM S WHERE S.F = 'A' GROUP BY W;")
    comp = compile_sql(sql, mode="batch")
    rng = np.random.default_rng(3)
    n = 6000
    flag = pa.array([chr(65 + i) for i in rng.integers(0, 4, n)])
    mode = pa.array([["MAIL", "SHIP", "AIR"][i] for i in rng.integers(0, 3, n)])
    word = pa.array([f"w{i}" for i in rng.integers(0, 5000, n)])
    value = rng.integers(-5, 6, n).astype(np.int64)
    half = n // 2        # two Arrow chunks, as a file read in two pieces
    cols = [pa.chunked_array([c.slice(0, half), c.slice(half)]) for c in (flag, mode, word)]
    signs = np.where(rng.random(n) < 0.2, -1, 1).astype(np.int8)
    engines = [comp.engine(b) for b in ("interp", "llvm")]
    for lo in range(0, n, 700):        # every batch one chunk but the one across the cut
        hi = min(lo + 700, n)
        batch = Batch("S", signs[lo:hi], tuple(c[lo:hi] for c in cols) + (value[lo:hi],), checked=True)
        for e in engines:
            e.apply(batch)
    results = [[(t.name, sorted(t.rows)) for t in e.results()] for e in engines]
    assert results[0] == results[1]
    for e in engines:
        e.close()
