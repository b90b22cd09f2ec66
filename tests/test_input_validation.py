"""Every input is checked at the boundary (API, CSV files, orderbook logs): a bad one is one
clean InputError naming relation, column and row (file:line:col for files), and the views are
exactly as they were before."""
from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from toaster.errors import InputError, ToasterError, UnknownNameError
from toaster.pipeline import compile_sql
from toaster.runtime.batch import Batch
from toaster.runtime.csv_source import iter_source, load_sources
from toaster.types import INT, FLOAT, DATE, STRING

SQL = """
CREATE STREAM R(A int, B float, D date, S string) FROM FILE '{path}' LINE DELIMITED CSV (delimiter := '|');
CREATE TABLE T(S string, W int) FROM FILE '{tpath}' LINE DELIMITED CSV (delimiter := '|');
SELECT R.S, SUM(R.A * R.B * T.W) FROM R, T WHERE R.S = T.S AND R.D < DATE('1996-01-01') GROUP BY R.S;
SELECT COUNT(*) FROM R WHERE R.D >= DATE('1995-02-28');
"""
TYPES = (INT, FLOAT, DATE, STRING)
GOOD = [(1, 2.5, 19950101, "x"), (2, 1.0, 19960229, "y"), (3, 4.0, 19950228, "x")]
BACKENDS = ["interp", "llvm"]


def engine_for(backend, tmp_path=None, r_lines=(), t_lines=("x|2", "y|3")):
    path, tpath = "r.csv", "t.csv"
    if tmp_path is not None:
        path, tpath = tmp_path / "r.csv", tmp_path / "t.csv"
        path.write_text("".join(line + "\n" for line in r_lines))
        tpath.write_text("".join(line + "\n" for line in t_lines))
    comp = compile_sql(SQL.format(path=path, tpath=tpath))
    return comp, comp.engine(backend)


def state(comp, engine):
    """Every map and every result: what must not change when an input is rejected."""
    return ({m.name: engine.read_map(m.name) for m in comp.m3.maps}, [(t.name, t.rows) for t in engine.results()])


@pytest.fixture(params=BACKENDS)
def loaded(request):
    comp, engine = engine_for(request.param)
    engine.load_table("T", [("x", 2), ("y", 3)])
    engine.apply(Batch.from_rows("R", TYPES, GOOD))
    yield comp, engine
    engine.close()


def rejected(comp, engine, action, *words):
    before = state(comp, engine)
    with pytest.raises(InputError) as info:
        action()
    assert all(w in str(info.value) for w in words), str(info.value)
    assert state(comp, engine) == before
    return info.value


@pytest.mark.parametrize("row, words", [
    ((1, 2.5, 19950101), ["R", "3 values", "expected 4"]),                     # too short
    ((1, 2.5, 19950101, "x", 9), ["R", "5 values", "expected 4"]),              # too long
    ((1.5, 2.5, 19950101, "x"), ["R.A", "expected an int", "1.5"]),
    ((True, 2.5, 19950101, "x"), ["R.A", "expected an int", "bool"]),
    ((2**63, 2.5, 19950101, "x"), ["R.A", "64-bit"]),
    ((1, "1.0", 19950101, "x"), ["R.B", "expected a float", "'1.0'"]),
    ((1, True, 19950101, "x"), ["R.B", "expected a float"]),
    ((1, 2.5, "1995-02-30", "x"), ["R.D", "1995-02-30"]),
    ((1, 2.5, 19951345, "x"), ["R.D", "19951345"]),
    ((1, 2.5, datetime.datetime(1995, 1, 1, 12), "x"), ["R.D", "datetime"]),
    ((1, 2.5, 1995.0101, "x"), ["R.D", "expected a date"]),
    ((1, 2.5, 19950101, 5), ["R.S", "expected a string", "int"]),
    ((1, 2.5, 19950101, b"x"), ["R.S", "expected a string", "bytes"]),
    ((1, 2.5, 19950101, None), ["R.S", "expected a string"]),
    ("abcd", ["R", "expected a tuple", "str"]),
])
def test_bad_rows_from_the_api(loaded, row, words):
    comp, engine = loaded
    rejected(comp, engine, lambda: engine.insert("R", row), *words)
    rejected(comp, engine, lambda: engine.delete("R", row), *words)
    rows = GOOD + [row]          # the bad row last: the good rows before it are not applied either
    e = rejected(comp, engine, lambda: engine.apply(Batch.from_rows("R", TYPES, rows, names="ABDS")), *words)
    assert "row 3" in str(e)


@pytest.mark.parametrize("make, words", [
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array([1.0, 2.0]), np.array([19950101, 19950101]))),
     ["4 columns", "batch has 3"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1.0, 2.0]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), np.array(["x", "y"], dtype=object))),
     ["R.A", "int64", "float64"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array(["1.0", "2"], dtype=object),
                                               np.array([19950101] * 2), np.array(["x", "y"], dtype=object))),
     ["R.B", "row 0", "'1.0'"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array([1.0, 2.0]),
                                               np.array([19950101, 19950230]), np.array(["x", "y"], dtype=object))),
     ["R.D", "row 1", "19950230"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), np.array(["x", 7], dtype=object))),
     ["R.S", "row 1", "expected a string"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), pa.array(["x", None]))),
     ["R.S", "row 1", "null"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), pa.array([1, 2]))),
     ["R.S", "expected strings"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2, 3]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), pa.array(["x", "y"]))),
     ["R.A", "length 3"]),
    (lambda: Batch("R", np.array([1, 2]), (np.array([1, 2]), np.array([1.0, 2.0]),
                                           np.array([19950101] * 2), pa.array(["x", "y"]))),
     ["R", "row 1", "sign 2"]),
    (lambda: Batch("R", np.array([1.0, 1.0]), (np.array([1, 2]), np.array([1.0, 2.0]),
                                               np.array([19950101] * 2), pa.array(["x", "y"]))),
     ["signs must be integers"]),
    (lambda: Batch("R", np.ones(2, np.int8), (np.array([1, 2], dtype=np.uint64) + np.uint64(2**63),
                                               np.array([1.0, 2.0]), np.array([19950101] * 2), pa.array(["x", "y"]))),
     ["R.A", "64-bit"]),
    (lambda: Batch("NOPE", np.ones(1, np.int8), (np.array([1]),)), ["unknown relation"]),
    (lambda: Batch.from_rows("T", (STRING, INT), [("x", 1)], signs=[-1]), ["deletions from TABLE T"]),
    (lambda: Batch.from_rows("R", TYPES, GOOD, signs=[1, 1]), ["2 signs for 3 rows"]),
    (lambda: Batch.from_rows("R", TYPES, GOOD, signs=[1, 1.5, 1]), ["R", "signs must be integers"]),
])
def test_bad_batches(loaded, make, words):
    comp, engine = loaded
    rejected(comp, engine, lambda: engine.apply(make()), *words)


def test_load_table_after_stream_events(loaded):
    comp, engine = loaded
    rejected(comp, engine, lambda: engine.load_table("T", [("z", 1)]), "TABLE T", "after stream events")
    rejected(comp, engine, lambda: engine.apply(Batch.from_rows("T", (STRING, INT), [("z", 1)])), "TABLE T")
    rejected(comp, engine, lambda: engine.load_table("R", [GOOD[0]]), "STREAM")


def test_read_map_of_an_unknown_map(loaded):
    comp, engine = loaded
    with pytest.raises(UnknownNameError) as info:
        engine.read_map("NO_SUCH_MAP")
    assert isinstance(info.value, ToasterError) and isinstance(info.value, KeyError)
    assert "unknown map 'NO_SUCH_MAP'" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dates_in_every_documented_form(backend):
    results = []
    for form in (lambda y, m, d: datetime.date(y, m, d), lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
                 lambda y, m, d: y * 10000 + m * 100 + d, lambda y, m, d: np.int64(y * 10000 + m * 100 + d)):
        comp, engine = engine_for(backend)
        engine.load_table("T", [("x", 2), ("y", 3)])
        for a, b, d, s in GOOD:
            engine.insert("R", (a, b, form(d // 10000, d // 100 % 100, d % 100), s))
        results.append(state(comp, engine))
        engine.close()
    assert results[0][1][1][1] == ((2,),)      # 1995-02-28 and 1996-02-29 count, 1995-01-01 does not
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("backend", BACKENDS)
def test_columnar_batches_as_they_are(backend):
    """Arrow, numpy (other int/float widths, datetime64[D]) and pandas-like columns are
    accepted as they are and give the same views as Python rows."""
    comp, engine = engine_for(backend)
    engine.load_table("T", [("x", 2), ("y", 3)])
    engine.apply(Batch.from_rows("R", TYPES, GOOD))
    want = state(comp, engine)
    engine.close()
    a, b, d, s = zip(*GOOD)
    days = np.array([f"{v // 10000}-{v // 100 % 100:02d}-{v % 100:02d}" for v in d], dtype="datetime64[D]")
    variants = [
        Batch.from_columns("R", pa.table({"a": pa.array(a, pa.int32()), "b": pa.array(b), "d": pa.array(days),
                                          "s": pa.array(s).dictionary_encode()})),
        Batch.from_columns("R", [np.array(a, np.int16), np.array(b, np.float32), days, np.array(s)]),
        Batch.from_columns("R", [np.array(a), np.array(b), np.array(d), pa.chunked_array([s[:1], s[1:]])]),
    ]
    for batch in variants:
        comp, engine = engine_for(backend)
        engine.load_table("T", [("x", 2), ("y", 3)])
        engine.apply(batch)
        assert state(comp, engine) == want
        engine.close()


# ------------------------------------------------------------------------------------- files
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad_line, column, words", [
    (b"4|1.0|1995-02-30|x", 7, ["R.D", "1995-02-30"]),
    (b"4|1.0|19950101|x", 7, ["R.D", "not a date"]),
    (b"4|1.5x|1995-01-01|x", 3, ["R.B", "not a float"]),
    (b"4.0|1.5|1995-01-01|x", 1, ["R.A", "not an int"]),
    (b"9223372036854775808|1.5|1995-01-01|x", 1, ["R.A", "64-bit"]),
    (b"4|1 .5|1995-01-01|x", 3, ["R.B", "not a float"]),
    (b"4|1.5|1995-01-01", 17, ["too few fields", "missing column S"]),
    (b"4|1.5|1995-01-01|x|y", 20, ["too many fields"]),
    (b"4|1.5|1995-01-01|\xff", 18, ["invalid UTF-8"]),
])
def test_bad_lines_in_files(tmp_path, backend, bad_line, column, words):
    """Batches of 2 lines: the batches before the bad line's batch are produced and applied,
    then one InputError with file:line:col; the views are those of the good batches."""
    good = [b"1|2.5|1995-01-01|x", b"2|1.0|1996-02-29|y", b"3|4.0|1995-02-28|x"]
    comp, engine = engine_for(backend, tmp_path, t_lines=("x|2", "y|3"))
    path = tmp_path / "r.csv"
    path.write_bytes(b"\n".join(good + [bad_line, b"5|1.0|1995-01-01|y"]) + b"\n")
    tables, _ = load_sources(comp.m3.relations, relations_used={"T"})
    for t in tables:
        engine.apply(t)
    decl = next(r for r in comp.m3.relations if r.name == "R")
    applied = 0
    with pytest.raises(InputError) as info:
        for batch in iter_source(decl, batch_size=2, columns=engine.columns_needed("R")):
            engine.apply(batch)
            applied += len(batch)
    e = info.value
    assert (e.file, e.line, e.column) == (str(path), 4, column), str(e)
    assert f"{path}:4:{column}: bad input:" in str(e) and all(w in str(e) for w in words), str(e)
    assert applied == 2           # lines 3-4 form the rejected batch
    comp2, ref = engine_for(backend)
    ref.load_table("T", [("x", 2), ("y", 3)])
    ref.apply(Batch.from_rows("R", TYPES, GOOD[:2]))
    assert state(comp, engine) == state(comp2, ref)
    engine.close()
    ref.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_reads_only_what_the_query_uses(tmp_path, backend):
    comp, engine = engine_for(backend, tmp_path, r_lines=[f"{a}|{b}|{d // 10000}-{d // 100 % 100:02d}-{d % 100:02d}|{s}"
                                                          for a, b, d, s in GOOD])
    assert engine.relations_needed() >= {"R", "T"}
    tables, streams = load_sources(comp.m3.relations, relations_used=engine.relations_needed(),
                                   columns=engine.columns_needed)
    for b in tables + streams:
        engine.apply(b)
    comp2, ref = engine_for(backend)
    ref.load_table("T", [("x", 2), ("y", 3)])
    ref.apply(Batch.from_rows("R", TYPES, GOOD))
    assert state(comp, engine) == state(comp2, ref)
    if backend == "llvm":     # every column of R is used by some trigger here
        assert engine.columns_needed("R") == (True, True, True, True)


def test_llvm_skips_unread_columns():
    comp = compile_sql("CREATE STREAM R(A int, B float, D date, S string);\nSELECT SUM(R.B) FROM R;")
    engine = comp.engine("llvm")
    assert engine.columns_needed("R") == (False, True, False, False)
    engine.apply(Batch("R", np.ones(2, np.int8), (None, np.array([1.5, 2.0]), None, None)))
    assert engine.results()[0].rows == ((3.5,),)
    with pytest.raises(InputError):       # interp reads every column
        comp.engine("interp").apply(Batch("R", np.ones(2, np.int8), (None, np.array([1.5, 2.0]), None, None)))
    engine.close()


def test_orderbook_bad_number_is_located(tmp_path):
    from toaster.runtime.csv_source import read_source
    from toaster.schema import Column, RelationDecl, Source
    cols = (Column("T", FLOAT), Column("ID", INT), Column("BROKER_ID", INT), Column("VOLUME", FLOAT),
            Column("PRICE", FLOAT))
    path = tmp_path / "book.csv"
    path.write_text("1,1,B,10,100\n2,2,B,1x,100\n")
    d = RelationDecl("BIDS", cols, "stream", Source(str(path), "orderbook", (("book", "bids"),)))
    with pytest.raises(InputError) as info:
        read_source(d)
    assert (info.value.line, info.value.column) == (2, 7) and "volume" in info.value.message
