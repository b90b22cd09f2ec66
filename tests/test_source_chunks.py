"""Sources read in bounded chunks: any chunk size gives the batches (and the errors, with their
absolute file:line:col) of a whole-file read; the sequence-ordered merge of streams read in
pieces gives the windows of the whole-stream merge; batches are produced before the file ends."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from toaster.errors import InputError
from toaster.runtime.batch import Batch
from toaster.runtime.chunked import Rebatcher, byte_chunks, chunk_views, count_breaks
from toaster.runtime.csv_source import iter_source, load_sources, open_sources, parse_csv_lines
from toaster.runtime.stream_order import cut_windows, merge_by_seq, merge_windows
from toaster.schema import Column, RelationDecl, Source
from toaster.types import DATE, FLOAT, INT, STRING

COLS = (Column("ID", INT), Column("PRICE", FLOAT), Column("D", DATE), Column("NAME", STRING))
WHOLE = 1 << 30           # a block size larger than any test file: the whole-file read


def decl(path, name="R", cols=COLS, **params):
    return RelationDecl(name, cols, "stream", Source(str(path), "csv", tuple(params.items())))


def outcome(make):
    """(batches as (relation, rows, seq), error position and message or None)."""
    out = []
    try:
        for b in make():
            out.append((b.relation, [(s, _norm(r)) for s, r in b.rows()],
                        None if b.seq is None else b.seq.tolist()))
    except InputError as e:
        return out, (e.file, e.line, e.column, e.message)
    return out, None


def _norm(row):
    return tuple("nan" if isinstance(v, float) and v != v else v for v in row)


# ------------------------------------------------------------------ byte chunks
@given(st.lists(st.sampled_from([b"a", b"bc", b"|", b"\n", b"\r", b"\r\n", b"\xc3\xa9"]), max_size=30),
       st.integers(1, 12))
def test_byte_chunks_cut_only_at_line_breaks(pieces, block_size):
    import io
    data = b"".join(pieces)
    chunks = list(byte_chunks(io.BytesIO(data), block_size))
    assert b"".join(c for c, _ in chunks) == data
    line = 1
    for i, (c, first) in enumerate(chunks):
        assert first == line
        if i < len(chunks) - 1:
            assert c[-1:] in (b"\n", b"\r") and not (c.endswith(b"\r") and chunks[i + 1][0].startswith(b"\n"))
        line += count_breaks(c)


@given(st.lists(st.integers(0, 7), max_size=12), st.sampled_from([None, 1, 2, 3, 5]))
def test_rebatcher_cuts_blocks_into_batches_of_exactly_the_size(sizes, size):
    blocks, n = [], 0
    for k in sizes:
        blocks.append(Batch("R", np.ones(k, np.int8), (np.arange(n, n + k),)))
        n += k
    out = Rebatcher(size)
    got = [b for block in blocks for b in out.add(block)] + list(out.finish())
    assert [v for b in got for v in b.columns[0].tolist()] == list(range(n))
    want = [] if n == 0 else [n] if size is None else [size] * (n // size) + ([n % size] if n % size else [])
    assert [len(b) for b in got] == want


# ------------------------------------------------------------------ one file, any chunk size
def _lines(n, bad_at=None, bad="x|1.0|1995-01-01|b"):
    out = [f"{i}|{i}.5|1995-01-{1 + i % 28:02d}|n{i}" for i in range(1, n + 1)]
    if bad_at is not None:
        out[bad_at - 1] = bad
    return out


@pytest.mark.parametrize("delimiter", ["|", "||"])          # Arrow, the line parser
@pytest.mark.parametrize("batch_size", [None, 1, 2, 5])
@pytest.mark.parametrize("block_size", [1, 5, 23, 64])
def test_any_chunk_size_gives_the_whole_reads_batches(tmp_path, delimiter, batch_size, block_size):
    lines = [l.replace("|", delimiter) for l in _lines(17)]
    lines[3:3] = ["", ""]                                       # empty lines are skipped
    path = tmp_path / "r.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    d = decl(path, delimiter=delimiter)
    whole = outcome(lambda: iter_source(d, batch_size, block_size=WHOLE))
    assert whole[1] is None and sum(len(rows) for _, rows, _ in whole[0]) == 17
    assert outcome(lambda: iter_source(d, batch_size, block_size=block_size)) == whole


@pytest.mark.parametrize("delimiter", ["|", "||"])
@pytest.mark.parametrize("bad,column,words", [
    ("x|1.0|1995-01-01|b", 1, "not an int"),
    ("1|1.0|1995-02-30|b", 7, "not a date"),
    ("1|1.0|1995-01-01", 17, "too few fields"),
    ("1|1.0|1995-01-01|b|c", 20, "too many fields"),
])
def test_an_error_in_the_third_chunk_names_its_absolute_line(tmp_path, delimiter, bad, column, words):
    lines = _lines(12, bad_at=9, bad=bad)
    lines.insert(2, "")                          # an empty line: the bad one is line 10 of the file
    lines = [l.replace("|", delimiter) for l in lines]
    path = tmp_path / "r.csv"
    path.write_text("".join(l + "\n" for l in lines))
    block = len(lines[0]) * 4                    # about four lines a chunk: line 10 is in the third
    d = decl(path, delimiter=delimiter)
    batches, error = outcome(lambda: iter_source(d, batch_size=4, block_size=block))
    if delimiter == "|":
        col = column
    else:                                        # each delimiter before the field is one longer
        col = column + (bad[:column - 1].count("|") if column <= len(bad) else bad.count("|"))
    assert error[:3] == (str(path), 10, col) and words in error[3]
    assert [len(rows) for _, rows, _ in batches] == [4, 4]       # rows 9-12 (with line 10): rejected
    assert outcome(lambda: iter_source(d, batch_size=4, block_size=WHOLE)) == (batches, error)


@pytest.mark.parametrize("delimiter", ["|", "||"])
def test_invalid_utf8_in_a_later_chunk(tmp_path, delimiter):
    lines = [l.replace("|", delimiter).encode() for l in _lines(10)]
    lines[7] = lines[7].replace(b"n8", b"n\xff8")
    path = tmp_path / "r.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    d = decl(path, delimiter=delimiter)
    got = outcome(lambda: iter_source(d, batch_size=3, block_size=40))
    assert got[1][1:3] == (8, len(lines[7].split(b"\xff")[0]) + 1) and "UTF-8" in got[1][3]
    assert [len(rows) for _, rows, _ in got[0]] == [3, 3]
    assert got == outcome(lambda: iter_source(d, batch_size=3, block_size=WHOLE))


_field_texts = st.one_of(
    st.integers(-2**64, 2**64).map(str),
    st.sampled_from(["+5", " 5", "", "1995-02-30", "1996-02-29", "1.5", "inf", "x", " ", "\t1", "007"]),
    st.text(st.characters(blacklist_characters="|\n\r", blacklist_categories=("Cs",)), max_size=3))
_line_lists = st.lists(st.one_of(st.lists(_field_texts, min_size=3, max_size=5).map("|".join), st.just("")),
                       min_size=1, max_size=10)


@settings(max_examples=150, deadline=None)
@given(_line_lists, st.sampled_from([None, 1, 2, 3]), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans(),
       st.integers(1, 40))
def test_chunked_arrow_reader_agrees_with_the_line_parser(tmp_path_factory, lines, batch_size, eol, trailing,
                                                          block_size):
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    path.write_bytes("".join(line + ("|" if trailing and line else "") + eol for line in lines).encode())
    d = decl(path, delimiter="|")
    chunked = outcome(lambda: iter_source(d, batch_size, block_size=block_size))
    python = outcome(lambda: parse_csv_lines(d, open(path, encoding="utf-8", newline=""), path=str(path),
                                             batch_size=batch_size))
    assert chunked == python


STRING_COLS = (Column("A", STRING), Column("B", STRING), Column("C", STRING))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["", "x|y|z", "||", "a|b", "é|ü|"]), min_size=1, max_size=12),
       st.sampled_from([None, 2]), st.sampled_from(["\n", "\r\n"]), st.integers(1, 30))
def test_empty_lines_of_an_all_string_relation_are_skipped_in_chunks(tmp_path_factory, lines, batch_size, eol,
                                                                     block_size):
    # Arrow reads an empty line as a row of empty strings when it does not skip it: a relation
    # without a number or date column must keep skipping them (and count its lines)
    path = tmp_path_factory.mktemp("csv") / "s.csv"
    path.write_bytes("".join(line + eol for line in lines).encode())
    d = decl(path, cols=STRING_COLS, delimiter="|")
    chunked = outcome(lambda: iter_source(d, batch_size, block_size=block_size))
    python = outcome(lambda: parse_csv_lines(d, open(path, encoding="utf-8", newline=""), path=str(path),
                                             batch_size=batch_size))
    assert chunked == python


def test_chunk_views_take_turns_in_two_buffers():
    import io
    data = b"".join(b"line %d\n" % i for i in range(100))
    buffers, got = set(), []
    for view in chunk_views(io.BytesIO(data), 64):
        buffers.add(id(view.obj))
        got.append(bytes(view))
    assert b"".join(got) == data and len(got) > 4 and len(buffers) == 2


def test_chunk_views_left_exported_do_not_change_under_the_consumer():
    import io
    import pyarrow as pa
    data = b"".join(b"line %d\n" % i for i in range(100))
    kept = []
    for view in chunk_views(io.BytesIO(data), 64):
        kept.append((pa.py_buffer(view), bytes(view)))       # a pyarrow buffer outliving its view
    assert all(buf.to_pybytes() == copy for buf, copy in kept)
    assert b"".join(copy for _, copy in kept) == data


# ------------------------------------------------------------------ sequence-ordered streams
def _pieces(b: Batch, cuts):
    lo = 0
    for hi in sorted(set(cuts)) + [len(b)]:
        if hi > lo:
            yield b.slice(lo, hi)
            lo = hi


def _window_rows(windows):
    return [[(b.relation, b.columns[0].tolist(), b.seq.tolist()) for b in w] for w in windows]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 12), max_size=15), min_size=1, max_size=4), st.integers(1, 7),
       st.data())
def test_merge_windows_in_pieces_equals_the_whole_merge(seqs, size, data):
    streams = [Batch(f"S{i}", np.ones(len(s), np.int8), (np.arange(len(s)),), np.array(s, np.int64))
               for i, s in enumerate(seqs)]
    whole = cut_windows(streams, *merge_by_seq([b.seq for b in streams]), size)
    cuts = [data.draw(st.lists(st.integers(0, max(len(b), 1)), max_size=5)) for b in streams]
    pieces = [_pieces(b, c) for b, c in zip(streams, cuts)]
    assert _window_rows(merge_windows(pieces, size)) == _window_rows(whole)


def _seq_decl(tmp_path, name, rows, delimiter="|"):
    path = tmp_path / f"{name.lower()}.csv"
    path.write_text("".join(delimiter.join(map(str, r)) + "\n" for r in rows))
    return decl(path, name=name, cols=(Column("A", INT),), delimiter=delimiter, deletions="true")


@pytest.mark.parametrize("batch_size", [None, 1, 3, 8])
@pytest.mark.parametrize("block_size", [4, 17, WHOLE])
def test_sequence_ordered_streams_read_in_chunks(tmp_path, batch_size, block_size):
    rng = np.random.default_rng(5)
    seq = np.arange(60)
    rng.shuffle(seq)
    parts = np.array_split(seq, 3)
    decls = [_seq_decl(tmp_path, n, [(int(s), int(s) % 2, int(s) * 10) for s in sorted(p)])
             for n, p in zip("RST", parts)]
    decls[1] = _seq_decl(tmp_path, "S", [(3, 1, 1), (1, 1, 2), (3, 1, 3)] + [(int(s), 1, 4) for s in sorted(parts[1])])
    (tmp_path / "p.csv").write_text("1\n2\n3\n4\n5\n")        # a stream without seq, fed after them
    plain = RelationDecl("P", (Column("A", INT),), "stream", Source(str(tmp_path / "p.csv"), "csv"))
    got = outcome(lambda: open_sources([decls[0], plain] + decls[1:], batch_size, block_size=block_size)[1])
    want = outcome(lambda: load_sources([decls[0], plain] + decls[1:], batch_size)[1])
    assert got == want and want[1] is None


@pytest.mark.parametrize("batch_size", [None, 1, 3, 8])
def test_steps_are_the_windows_of_the_sequence_ordered_streams(tmp_path, batch_size):
    """open_sources(steps=True): a window of the sequence-ordered streams is one step (a Batch
    per relation it touches, as cut_windows gives), every other batch a step of its own; the
    steps flattened are the batches of steps=False."""
    rng = np.random.default_rng(11)
    seq = np.arange(40)
    rng.shuffle(seq)
    decls = [_seq_decl(tmp_path, n, [(int(s), int(int(s) % 3 > 0), int(s)) for s in sorted(p)])
             for n, p in zip("RS", np.array_split(seq, 2))]
    (tmp_path / "p.csv").write_text("1\n2\n3\n")
    plain = RelationDecl("P", (Column("A", INT),), "stream", Source(str(tmp_path / "p.csv"), "csv"))
    steps = list(open_sources(decls + [plain], batch_size, steps=True)[1])
    assert outcome(lambda: (b for step in steps for b in step)) == \
        outcome(lambda: open_sources(decls + [plain], batch_size)[1])
    whole = [b for d in decls for b in load_sources([d])[1]]
    windows = cut_windows(whole, *merge_by_seq([b.seq for b in whole]), batch_size)
    sequenced = [s for s in steps if s[0].relation != "P"]
    assert [[(b.relation, b.seq.tolist()) for b in s] for s in sequenced] == \
        [[(b.relation, b.seq.tolist()) for b in w] for w in windows]
    assert all(len(s) == 1 for s in steps if s[0].relation == "P")



@pytest.mark.parametrize("seed", [None, 1, 2])
def test_streams_sharing_a_file_and_seeded_interleaving_read_in_chunks(tmp_path, seed):
    cols = (Column("A", INT),)
    shared = tmp_path / "x.csv"
    shared.write_text("".join(f"{i}\n" for i in range(23)))
    other = tmp_path / "y.csv"
    other.write_text("".join(f"{i}\n" for i in range(100, 111)))
    decls = [RelationDecl(n, cols, "stream", Source(str(p), "csv")) for n, p in (("A", shared), ("B", other), ("C", shared))]
    seqd = _seq_decl(tmp_path, "S", [(i, 1, i) for i in range(9)])
    got = outcome(lambda: open_sources(decls + [seqd], 4, seed=seed, block_size=6)[1])
    assert got == outcome(lambda: load_sources(decls + [seqd], 4, seed=seed)[1]) and got[1] is None

def test_a_bad_line_in_a_sequence_ordered_stream_stops_before_its_window(tmp_path, monkeypatch):
    import toaster.runtime.csv_source as cs
    monkeypatch.setattr(cs, "_SEQ_PIECE_ROWS", 1)       # pieces of batch_size rows, not thousands
    r = _seq_decl(tmp_path, "R", [(i, 1, i) for i in range(0, 40, 2)])
    s = _seq_decl(tmp_path, "S", [(i, 1, i) for i in range(1, 30, 2)] + [(31, 7, 0), (33, 1, 1)])
    tables, streams = open_sources([r, s], batch_size=4, block_size=16)
    fed = []
    with pytest.raises(InputError) as info:
        for b in streams:
            fed.extend(b.seq.tolist())
    assert (info.value.line, info.value.column) == (16, 4) and "operation" in info.value.message
    assert sorted(fed) == list(range(len(fed))) and len(fed) % 4 == 0 and 20 <= len(fed) <= 31


# ------------------------------------------------------------------ laziness
def test_open_sources_checks_files_first_and_reads_lazily(tmp_path):
    good = tmp_path / "g.csv"
    good.write_text("1|1.5|1995-01-01|a\n" * 10 + "bad\n")
    with pytest.raises(InputError) as info:
        open_sources([decl(good, delimiter="|"), decl(tmp_path / "missing.csv", name="M", delimiter="|")])
    assert "cannot read" in info.value.message and info.value.file.endswith("missing.csv")
    tables, streams = open_sources([decl(good, delimiter="|")], batch_size=5)
    assert len(next(streams)) == 5 and len(next(streams)) == 5
    with pytest.raises(InputError) as info:
        next(streams)
    assert info.value.line == 11


@pytest.mark.parametrize("delimiter", ["|", "||"])
def test_the_first_batch_comes_before_the_file_is_complete(tmp_path, delimiter):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    more = threading.Event()

    def writer():
        with open(fifo, "w") as f:
            f.write("".join(l.replace("|", delimiter) + "\n" for l in _lines(50)))
            f.flush()
            more.wait(20)                  # the rest only once the reader has produced a batch
            f.write("".join(l.replace("|", delimiter) + "\n" for l in _lines(50)))
    t = threading.Thread(target=writer)
    t.start()
    try:
        it = iter_source(decl(fifo, delimiter=delimiter), batch_size=10, block_size=64)
        assert len(next(it)) == 10         # would block (then fail) if the whole file were read
        assert not more.is_set()
    finally:
        more.set()
        t.join()
    assert sum(len(b) for b in it) == 90


# ------------------------------------------------------------------ through the CLI
def test_run_reads_in_chunks_with_the_same_result_and_absolute_error_lines(tmp_path, monkeypatch, capsys):
    import toaster.runtime.arrow_csv as arrow_csv
    from toaster.cli import main
    rows = [f"{i}|{i % 3}|{i}" for i in range(200)]
    (tmp_path / "s.csv").write_text("\n".join(rows) + "\n")
    query = tmp_path / "q.sql"
    query.write_text("CREATE STREAM S(A int, B int, C int) FROM FILE 's.csv' LINE DELIMITED CSV (delimiter := '|');\n"
                     "SELECT S.B, SUM(S.C) AS total FROM S GROUP BY S.B;\n")
    args = [str(query), "--run", "--base-dir", str(tmp_path), "--batch-size", "7", "--output", "csv"]
    assert main(args) == 0
    whole = capsys.readouterr().out
    monkeypatch.setattr(arrow_csv, "BLOCK_SIZE", 64)      # about 8 lines a chunk
    assert main(args) == 0
    assert capsys.readouterr().out == whole
    rows[150] = "150|x|150"
    (tmp_path / "s.csv").write_text("\n".join(rows) + "\n")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "s.csv:151:5: bad input: S.B" in err and "Traceback" not in err
