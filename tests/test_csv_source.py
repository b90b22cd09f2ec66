"""CSV sources (DIALECT.md §2.2): round trips, DuckDB's CSV reader as an oracle, error locations."""
from __future__ import annotations

import datetime
import os

import pytest
from hypothesis import given, strategies as st

from toaster.errors import InputError, UnsupportedError
from toaster.runtime.batch import Batch
from toaster.runtime.csv_source import interleave, iter_source, load_sources, parse_csv_lines, read_source
from toaster.schema import Column, RelationDecl, Source
from toaster.testing import random_stream
from toaster.types import DATE, FLOAT, INT, STRING, int_to_date

COLS = (Column("ID", INT), Column("PRICE", FLOAT), Column("D", DATE), Column("NAME", STRING))


def decl(path="data.csv", kind="stream", cols=COLS, **params):
    return RelationDecl("R", cols, kind, Source(path, "csv", tuple(params.items())))


def text_of(v, t):
    return int_to_date(v) if t == DATE else repr(v) if t == FLOAT else str(v)


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def rows_of(batches):
    return [(s, r) for b in batches for s, r in b.rows()]


names = st.text(st.characters(blacklist_characters="|\n\r", blacklist_categories=("Cs",)), max_size=6)
dates = st.dates(datetime.date(1000, 1, 1), datetime.date(9999, 12, 31)).map(
    lambda d: d.year * 10000 + d.month * 100 + d.day)
csv_rows = st.tuples(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), dates, names)


@given(st.lists(csv_rows, min_size=1, max_size=20), st.sampled_from([None, 1, 3]))
def test_round_trip(rows, batch_size):
    d = decl(delimiter="|")
    lines = ["|".join(text_of(v, c.type) for v, c in zip(r, COLS)) for r in rows]
    batches = list(parse_csv_lines(d, [l + "\n" for l in lines], batch_size=batch_size))
    assert rows_of(batches) == [(1, r) for r in rows]
    if batch_size:
        assert all(len(b) <= batch_size for b in batches)
    assert all(b.columns[0].dtype.name == "int64" and b.columns[1].dtype.name == "float64" for b in batches)


def test_agrees_with_duckdb_csv_reader(tmp_path):
    import duckdb
    stream = random_stream([RelationDecl("R", COLS, "stream")], seed=4, n_batches=10)
    rows = [r for b in stream for _, r in b.rows()]
    path = write(tmp_path / "r.csv", [";".join(text_of(v, c.type) for v, c in zip(r, COLS)) for r in rows])
    mine = [r for _, r in rows_of(read_source(decl(path, delimiter=";")))]
    con = duckdb.connect()
    theirs = con.execute(
        "SELECT * FROM read_csv(?, delim=';', header=false, quote='', escape='',"
        " columns={'ID':'BIGINT','PRICE':'DOUBLE','D':'DATE','NAME':'VARCHAR'})", [path]).fetchall()
    theirs = [(i, p, d.year * 10000 + d.month * 100 + d.day, n) for i, p, d, n in theirs]
    assert mine == theirs


def test_deletions_and_fields_alias(tmp_path):
    rel = RelationDecl("R", (Column("A", INT), Column("B", INT)), "stream")
    stream = random_stream([rel], seed=8, deletes=True, n_batches=12)
    events = rows_of(stream)
    lines = [f"{i // 2}|{1 if s > 0 else 0}|{a}|{b}" for i, (s, (a, b)) in enumerate(events)]
    path = write(tmp_path / "r.csv", lines)
    d = RelationDecl("R", rel.columns, "stream", Source(path, "csv", (("fields", "|"), ("deletions", "true"))))
    assert rows_of(read_source(d)) == events
    assert [len(b) for b in read_source(d, batch_size=5)] == [5] * (len(events) // 5) + \
        ([len(events) % 5] if len(events) % 5 else [])


def test_default_delimiter_no_trimming_crlf_trailing_delimiter(tmp_path):
    cols = (Column("A", INT), Column("S", STRING))
    path = tmp_path / "r.csv"
    path.write_bytes(b"1, padded \r\n\n2,x,\n")
    assert rows_of(read_source(decl(str(path), cols=cols))) == [(1, (1, " padded ")), (1, (2, "x"))]


def test_relative_paths_resolve_against_cwd_or_base_dir(tmp_path, monkeypatch):
    cols = (Column("A", INT),)
    (tmp_path / "data").mkdir()
    write(tmp_path / "data" / "a.csv", ["7"])
    d = decl("data/a.csv", cols=cols)
    assert rows_of(read_source(d, base_dir=str(tmp_path))) == [(1, (7,))]
    monkeypatch.chdir(tmp_path)
    assert rows_of(read_source(d)) == [(1, (7,))]
    with pytest.raises(InputError):
        read_source(decl("data/missing.csv", cols=cols))


@pytest.mark.parametrize("line, column, col_name, words", [
    ("5|2.5|1995-01-01|x|extra", 20, None, "too many fields"),
    ("5|2.5|1995-01-01", 17, "NAME", "too few fields"),
    ("5x|2.5|1995-01-01|x", 1, "ID", "not an int"),
    ("5|2.5.1|1995-01-01|x", 3, "PRICE", "not a float"),
    ("5|2.5|1995-13-01|x", 7, "D", "not a date"),
    ("5|2.5|19950101|x", 7, "D", "not a date"),
])
def test_malformed_line_is_located(tmp_path, line, column, col_name, words):
    path = write(tmp_path / "r.csv", ["1|1.0|1994-01-01|ok", line])
    with pytest.raises(InputError) as info:
        read_source(decl(path, delimiter="|"))
    e = info.value
    assert (e.file, e.line, e.column) == (path, 2, column)
    assert words in e.message and (col_name is None or col_name in e.message)
    assert f"{path}:2:{column}" in str(e)


def test_bad_op_and_batch_rejected_whole(tmp_path):
    cols = (Column("A", INT), Column("B", INT))
    path = write(tmp_path / "r.csv", ["1|1|1|2", "2|1|3|4", "3|1|5|6", "4|2|7|8"])
    d = decl(path, cols=cols, delimiter="|", deletions="true")
    it = iter_source(d, batch_size=2)
    first = next(it)                       # lines 1-2 are fine
    assert rows_of([first]) == [(1, (1, 2)), (1, (3, 4))]
    with pytest.raises(InputError) as info:  # lines 3-4: the whole batch is rejected
        next(it)
    assert (info.value.line, info.value.column) == (4, 3) and "operation" in info.value.message
    with pytest.raises(InputError):
        read_source(d)                     # default: one batch, nothing is produced


def _batch(tag, n=1):
    return Batch.from_rows(tag, (INT,), [(i,) for i in range(n)])


def test_interleave_orders():
    s1 = [_batch("A", i + 1) for i in range(5)]
    s2 = [_batch("B", i + 1) for i in range(4)]
    assert list(interleave([s1, s2])) == s1 + s2
    orders = set()
    for seed in range(6):
        out = list(interleave([s1, s2], seed=seed))
        assert out == list(interleave([s1, s2], seed=seed))          # deterministic
        assert [b for b in out if b.relation == "A"] == s1            # each stream keeps its order
        assert [b for b in out if b.relation == "B"] == s2
        orders.add(tuple(b.relation for b in out))
    assert len(orders) > 1


def test_load_sources_tables_first(tmp_path):
    cols = (Column("A", INT),)
    s = RelationDecl("S", cols, "stream", Source(write(tmp_path / "s.csv", ["1", "2", "3"]), "csv"))
    t = RelationDecl("T", cols, "table", Source(write(tmp_path / "t.csv", ["9", "8"]), "csv"))
    free = RelationDecl("F", cols, "stream")
    tables, streams = load_sources([s, free, t], batch_size=2)
    assert [(b.relation, len(b)) for b in tables] == [("T", 2)]
    assert [(b.relation, len(b)) for b in streams] == [("S", 2), ("S", 1)]


def test_load_sources_same_file_in_file_order(tmp_path):
    cols = (Column("A", INT),)
    path = write(tmp_path / "x.csv", ["1", "2", "3"])
    a = RelationDecl("A", cols, "stream", Source(path, "csv"))
    b = RelationDecl("B", cols, "stream", Source(path, "csv"))
    _, streams = load_sources([a, b], batch_size=2)
    assert [(x.relation, [r for _, r in x.rows()]) for x in streams] == \
        [("A", [(1,), (2,)]), ("B", [(1,), (2,)]), ("A", [(3,)]), ("B", [(3,)])]


# ------------------------------------------------------------------ Arrow reader vs line parser
_field_texts = st.one_of(
    st.integers(-2**64, 2**64).map(str), st.floats(allow_nan=True).map(repr),
    st.sampled_from(["+5", " 5", "5 ", "", "1995-02-30", "1996-02-29", "1995-02-28", "19950101", "0000-01-01",
                     "1.5", "inf", "-Infinity", "1e999", "x", " ", "\t1", "1995-01-01 ", "007"]),
    st.text(st.characters(blacklist_characters="|\n\r", blacklist_categories=("Cs",)), max_size=4))
_lines = st.lists(st.lists(_field_texts, min_size=3, max_size=5).map("|".join), min_size=1, max_size=8)


def _outcome(batches_fn):
    out = []
    try:
        for b in batches_fn():
            out.append(rows_of([b]))
    except InputError as e:
        return out, (e.file, e.line, e.column, e.message)
    return out, None


@given(_lines, st.sampled_from([None, 1, 2]), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_arrow_reader_agrees_with_line_parser(tmp_path_factory, lines, batch_size, eol, trailing):
    cols = (Column("ID", INT), Column("PRICE", FLOAT), Column("D", DATE), Column("NAME", STRING))
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    text = "".join(line + ("|" if trailing else "") + eol for line in lines)
    path.write_bytes(text.encode())
    d = decl(str(path), cols=cols, delimiter="|")
    arrow = _outcome(lambda: iter_source(d, batch_size=batch_size))
    python = _outcome(lambda: parse_csv_lines(d, open(path, encoding="utf-8", newline=""), path=str(path),
                                              batch_size=batch_size))
    assert _same(arrow, python)


def _same(a, b) -> bool:
    """Equal outcomes, NaN equal to NaN."""
    import math
    norm = lambda v: "nan" if isinstance(v, float) and math.isnan(v) else v
    deep = lambda batches: [[(s, tuple(map(norm, r))) for s, r in rows] for rows in batches]
    return deep(a[0]) == deep(b[0]) and a[1] == b[1]


def test_only_the_columns_asked_for_are_converted(tmp_path):
    path = write(tmp_path / "r.csv", ["1|2.5|1995-01-01|a", "2|3.5|1996-02-29|b"])
    [b] = read_source(decl(path, delimiter="|"), columns=(True, False, True, False))
    assert b.columns[1] is None and b.columns[3] is None
    assert b.columns[0].tolist() == [1, 2] and b.columns[2].tolist() == [19950101, 19960229]


def test_invalid_utf8_is_one_input_error(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"1|1.0|1994-01-01|ok\n2|1.0|1994-01-01|b\xffad\n")
    with pytest.raises(InputError) as info:
        read_source(decl(str(path), delimiter="|"))
    assert (info.value.line, info.value.column) == (2, 19) and "UTF-8" in info.value.message
    with pytest.raises(InputError) as info:        # the line parser (two-character delimiter)
        read_source(decl(str(path).replace(".csv", ".csv"), delimiter="||"))
    assert info.value.line == 2 and "UTF-8" in info.value.message


def test_load_sources_only_relations_used(tmp_path):
    cols = (Column("A", INT), Column("B", INT))
    s = RelationDecl("S", cols, "stream", Source(write(tmp_path / "s.csv", ["1,2"]), "csv"))
    u = RelationDecl("U", cols, "stream", Source(str(tmp_path / "missing.csv"), "csv"))
    tables, streams = load_sources([s, u], relations_used={"S"}, columns=lambda r: (False, True))
    assert [(b.relation, b.columns[0], b.columns[1].tolist()) for b in streams] == [("S", None, [2])]


# ------------------------------------------------------------------ sequence-ordered streams
def _seq_stream(tmp_path, name, lines, delimiter="|"):
    cols = (Column("A", INT),)
    path = write(tmp_path / f"{name.lower()}.csv", lines)
    return RelationDecl(name, cols, "stream", Source(path, "csv", (("delimiter", delimiter), ("deletions", "true"))))


def _events(batches):
    return [(b.relation, int(s), r[0]) for b in batches for s, r in b.rows()]


@pytest.mark.parametrize("delimiter", ["|", "||"])       # the Arrow reader and the line parser
def test_streams_with_sequence_numbers_are_fed_in_their_order(tmp_path, delimiter):
    r = _seq_stream(tmp_path, "R", [delimiter.join(x) for x in
                                    [("1", "1", "10"), ("4", "1", "11"), ("5", "0", "10"), ("9", "1", "12")]], delimiter)
    s = _seq_stream(tmp_path, "S", [delimiter.join(x) for x in [("2", "1", "20"), ("3", "1", "21"), ("9", "1", "22")]],
                    delimiter)
    _, one = load_sources([r, s], batch_size=1)
    assert _events(one) == [("R", 1, 10), ("S", 1, 20), ("S", 1, 21), ("R", 1, 11), ("R", -1, 10),
                            ("R", 1, 12), ("S", 1, 22)]       # seq 9 in both: R, declared first
    assert all(len(b) == 1 for b in one)
    _, windows = load_sources([r, s], batch_size=3)
    # windows of 3 events, one Batch per relation in order of first appearance
    assert [(b.relation, len(b)) for b in windows] == [("R", 1), ("S", 2), ("R", 3), ("S", 1)]
    _, whole = load_sources([r, s])
    assert [(b.relation, len(b)) for b in whole] == [("R", 4), ("S", 3)]
    assert sorted(_events(whole)) == sorted(_events(one))


def test_sequence_order_keeps_a_files_own_order_and_other_streams_in_place(tmp_path):
    cols = (Column("A", INT),)
    plain = RelationDecl("P", cols, "stream", Source(write(tmp_path / "p.csv", ["7", "8"]), "csv"))
    r = _seq_stream(tmp_path, "R", ["5|1|1", "2|1|2", "6|1|3"])       # 2 after 5: stays after it
    s = _seq_stream(tmp_path, "S", ["3|1|4", "5|1|5"])
    _, out = load_sources([r, plain, s], batch_size=1)
    assert _events(out) == [("S", 1, 4), ("R", 1, 1), ("R", 1, 2), ("S", 1, 5), ("R", 1, 3),
                            ("P", 1, 7), ("P", 1, 8)]


@pytest.mark.parametrize("delimiter", ["|", "||"])
def test_a_bad_sequence_number_is_located(tmp_path, delimiter):
    r = _seq_stream(tmp_path, "R", ["1|1|1".replace("|", delimiter), "x2|1|2".replace("|", delimiter)], delimiter)
    with pytest.raises(InputError) as info:
        load_sources([r])
    e = info.value
    assert (e.line, e.column) == (2, 1) and "sequence number" in e.message


def test_is_ascii_finds_a_high_byte_anywhere():
    from toaster.runtime.arrow_csv import is_ascii
    for n in range(0, 26):
        assert is_ascii(b"a" * n) and is_ascii(memoryview(bytearray(b"b" * n)))
        for k in range(n):
            for high in (0x80, 0xC3, 0xFF):
                data = bytearray(b"a" * n)
                data[k] = high
                assert not is_ascii(data) and not is_ascii(memoryview(data)[: k + 1])


def test_non_ascii_text_is_read_as_the_line_parser_reads_it(tmp_path):
    # a chunk with a non-ASCII byte keeps Arrow's UTF-8 check (an all-ASCII one skips it)
    path = tmp_path / "r.csv"
    path.write_bytes("1|1.0|1994-01-01|café\n2|2.5|1994-01-02|naïve ✓\n3|3.0|1994-01-03|plain\n".encode())
    d = decl(str(path), delimiter="|")
    arrow = _outcome(lambda: iter_source(d))
    python = _outcome(lambda: parse_csv_lines(d, open(path, encoding="utf-8", newline=""), path=str(path)))
    assert arrow[1] is None and _same(arrow, python)
    assert [r[3] for _, r in arrow[0][0]] == ["café", "naïve ✓", "plain"]
