"""The orderbook adaptor (DIALECT.md §2.3) against a plain reference model of an order book,
against the former per-line adaptor (hypothesis), through the CSV-source hook, and end to end
against DuckDB."""
from __future__ import annotations

import math
import os
import random
import tempfile
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from toaster.errors import InputError
from toaster.runtime.csv_source import load_sources, read_source
from toaster.runtime.orderbook import iter_orderbook, orderbook_events, orderbook_settings, parse_orderbook_lines
from toaster.schema import Column, RelationDecl, Source
from toaster.types import FLOAT, INT

COLS = (Column("T", FLOAT), Column("ID", INT), Column("BROKER_ID", INT), Column("VOLUME", FLOAT),
        Column("PRICE", FLOAT))


def decl(book="bids", path="book.csv", brokers=None, deterministic="yes", name=None, cols=COLS):
    params = [("book", book)]
    if brokers is not None:
        params.append(("brokers", str(brokers)))
    if deterministic is not None:
        params.append(("deterministic", deterministic))
    return RelationDecl(name or book.upper(), cols, "stream", Source(path, "orderbook", tuple(params)))


def reference_book(lines, book: str, brokers: int):
    """An independent, naive model: replay the log and return the final book as a Counter of rows
    and the multiset of every (sign, row) change; brokers deterministic."""
    side = "B" if book == "bids" else "S"
    held = {}
    changes = []
    for ln in lines:
        t, oid, action, vol, price = ln.split(",")
        oid = int(oid)
        if action == side:
            if oid in held:
                changes.append((-1, held.pop(oid)))
            held[oid] = (float(t), oid, oid % brokers, float(vol), float(price))
            changes.append((1, held[oid]))
        elif action in ("D", "F") and oid in held:
            changes.append((-1, held.pop(oid)))
        elif action == "E" and oid in held:
            old = held.pop(oid)
            changes.append((-1, old))
            if old[3] - float(vol) > 0:
                held[oid] = (old[0], oid, old[2], old[3] - float(vol), old[4])
                changes.append((1, held[oid]))
    return Counter(held.values()), changes


def random_log(rng: random.Random, n: int) -> list[str]:
    lines, ids = [], []
    for i in range(n):
        a = rng.choice("BBSSDDEEFXT")
        if a in "BS" or not ids:
            oid = len(ids) + 1 if a in "BS" or rng.random() < 0.5 else rng.randint(1, 50)
            if a in "BS":
                ids.append(oid)
        else:
            oid = rng.choice(ids + [999])
        lines.append(f"{i}.5,{oid},{a},{rng.choice([50, 100, 150, 300])},{rng.choice([9.5, 10.0, 10.25])}")
    return lines


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("book", ["bids", "asks"])
def test_matches_reference_model(seed, book):
    lines = random_log(random.Random(seed), 200)
    d = decl(book, brokers=3)
    got = [(s, row) for _, s, row in orderbook_events(d, lines)]
    final, changes = reference_book(lines, book, 3)
    assert got == changes
    net = Counter()
    for b in parse_orderbook_lines(d, lines, batch_size=7):
        assert len(b) <= 7
        for s, row in b.rows():
            net[row] += s
    assert +net == final and all(v >= 0 for v in net.values())


def test_partial_fill_keeps_price_and_time():
    lines = ["1.0,7,B,300,10.5", "2.0,7,E,100,99.0", "3.0,7,E,200,99.0"]
    ev = [(s, row) for _, s, row in orderbook_events(decl("bids", brokers=4), lines)]
    inserted = ev[0][1]
    # E: delete the stored tuple, re-insert with the volume reduced; price and time unchanged
    assert ev[1] == (-1, inserted)
    assert ev[2][0] == 1 and ev[2][1][4] == inserted[4] and ev[2][1][0] == inserted[0]
    assert ev[2][1][3] == inserted[3] - 100.0
    # a fill of the remaining volume removes the order
    assert ev[3] == (-1, ev[2][1]) and len(ev) == 4


def test_other_book_and_unknown_actions_are_ignored():
    lines = ["1,1,S,100,10", "2,1,D,100,10", "3,2,X,5,5", "4,3,T,5,5", "5,4,C,1,1"]
    assert list(orderbook_events(decl("bids"), lines)) == []
    asks = list(orderbook_events(decl("asks"), lines))
    assert [s for _, s, _ in asks] == [1, -1]


def test_brokers_deterministic_and_random():
    lines = [f"{i},{i},B,100,10" for i in range(1, 60)]
    det = [row[2] for _, _, row in orderbook_events(decl("bids", brokers=7), lines)]
    assert det == [i % 7 for i in range(1, 60)]
    rnd1 = [row[2] for _, _, row in orderbook_events(decl("bids", brokers=7, deterministic=None), lines)]
    rnd2 = [row[2] for _, _, row in orderbook_events(decl("bids", brokers=7, deterministic="no"), lines)]
    assert rnd1 == rnd2                      # reproducible
    assert set(rnd1) <= set(range(7)) and len(set(rnd1)) > 1
    default = [row[2] for _, _, row in orderbook_events(decl("bids", brokers=None), lines)]
    assert default == [i % 10 for i in range(1, 60)]      # brokers defaults to 10


def test_malformed_lines_and_parameters():
    with pytest.raises(InputError) as e:
        list(orderbook_events(decl("bids"), ["1,1,B,100,10", "2,2,B,100"], path="f.csv"))
    assert (e.value.file, e.value.line) == ("f.csv", 2) and e.value.column is not None
    with pytest.raises(InputError, match="volume"):
        list(orderbook_events(decl("bids"), ["1,1,B,lots,10"]))
    with pytest.raises(InputError, match="book"):
        list(orderbook_events(decl("sells"), ["1,1,B,1,10"]))
    with pytest.raises(InputError, match="brokers"):
        list(orderbook_events(decl("bids", brokers=0), ["1,1,B,1,10"]))
    with pytest.raises(InputError, match="5 columns"):
        list(orderbook_events(decl("bids", cols=COLS[:4]), ["1,1,B,1,10"]))


def test_csv_source_hook_reads_both_books_from_one_file(tmp_path):
    lines = random_log(random.Random(11), 120)
    path = tmp_path / "book.csv"
    path.write_text("\n".join(lines) + "\n")
    bids = decl("bids", str(path), brokers=5)
    asks = decl("asks", str(path), brokers=5)
    for d in (bids, asks):
        net = Counter()
        for b in read_source(d, batch_size=10):
            for s, row in b.rows():
                net[row] += s
        assert +net == reference_book(lines, d.source.param("book"), 5)[0]
    _, streams = load_sources([bids, asks], batch_size=16)
    assert {b.relation for b in streams} == {"BIDS", "ASKS"}


def test_orderbook_query_against_duckdb(tmp_path):
    from bench.finance import build_orderbook_log
    from toaster.pipeline import compile_sql
    from toaster.testing import Oracle, compare_results
    path = tmp_path / "log.csv"
    path.write_text("\n".join(build_orderbook_log(1500, seed=3, book_size=100)) + "\n")
    src = f"FROM FILE '{path}' LINE DELIMITED orderbook (book := '%s', brokers := '4', deterministic := 'yes')"
    sql = (f"CREATE STREAM BIDS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) {src % 'bids'};\n"
           f"CREATE STREAM ASKS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) {src % 'asks'};\n"
           "SELECT b.BROKER_ID, SUM(b.VOLUME * a.PRICE) AS X, COUNT(*) AS N FROM BIDS b, ASKS a "
           "WHERE b.BROKER_ID = a.BROKER_ID GROUP BY b.BROKER_ID;")
    comp = compile_sql(sql, mode="batch")
    engine = comp.engine("interp")
    oracle = Oracle(comp.m3.relations)
    _, streams = load_sources(comp.m3.relations, batch_size=50)
    for b in streams:
        engine.apply(b)
        oracle.apply(b)
    q = comp.queries[0]
    expected = oracle.query(comp.oracle_sql[0])
    assert expected, "the book should not be empty at the end"
    assert compare_results(engine.result(q.name), expected, len(q.key_columns)) == []


# ----------------------------------------------------------------------------- the per-line reference
def per_line_events(decl: RelationDecl, lines, *, path: str = "<input>", first_line: int = 1):
    """The adaptor as it was written line by line in Python (kept here as the reference the
    vectorized adaptor must agree with): (line number, sign, row) per change."""
    action_in, brokers, deterministic = orderbook_settings(decl)
    rng = random.Random(f"orderbook:{action_in}")
    cast = tuple(float if c.type == FLOAT else int for c in decl.columns)
    book: dict[int, tuple] = {}
    for lineno, raw in enumerate(lines, start=first_line):
        line = raw.rstrip("\n")
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip() == "":
            continue
        fields = line.split(",")
        if len(fields) != 5:
            raise InputError(f"{decl.name}: orderbook line has {len(fields)} fields, expected 5 "
                             "(t,id,action,volume,price)", file=path, line=lineno,
                             column=_ref_column(fields, min(len(fields), 5)))
        action = fields[2].strip().upper()
        if action not in ("B", "S", "D", "F", "E"):
            continue
        if action in ("B", "S") and action != action_in:
            continue
        oid = _ref_parse(decl, 1, int, fields, path, lineno)
        if action in ("B", "S"):
            t = _ref_parse(decl, 0, float, fields, path, lineno)
            vol = _ref_parse(decl, 3, float, fields, path, lineno)
            price = _ref_parse(decl, 4, float, fields, path, lineno)
            old = book.pop(oid, None)
            if old is not None:
                yield lineno, -1, old
            broker = oid % brokers if deterministic else rng.randrange(brokers)
            row = (cast[0](t), oid, broker, cast[3](vol), cast[4](price))
            book[oid] = row
            yield lineno, 1, row
        elif action in ("D", "F"):
            old = book.pop(oid, None)
            if old is not None:
                yield lineno, -1, old
        else:
            vol = _ref_parse(decl, 3, float, fields, path, lineno)
            old = book.pop(oid, None)
            if old is None:
                continue
            yield lineno, -1, old
            left = old[3] - cast[3](vol)
            if left > 0:
                row = old[:3] + (left,) + old[4:]
                book[oid] = row
                yield lineno, 1, row


def _ref_column(fields, index):
    return sum(len(f) + 1 for f in fields[:index]) + 1


def _ref_parse(decl, index, conv, fields, path, lineno):
    text = fields[index].strip()
    try:
        v = conv(text)
    except ValueError:
        raise InputError(f"{decl.name}: orderbook field {('t', 'id', 'action', 'volume', 'price')[index]} "
                         f"is not a number: {text!r}", file=path, line=lineno,
                         column=_ref_column(fields, index)) from None
    if conv is float and decl.columns[index].type != FLOAT and not float(v).is_integer():
        raise InputError(f"{decl.columns[index].name}: not an integer", file=path, line=lineno,
                         column=_ref_column(fields, index))
    return v


def _key(row):
    """A row with NaN comparable to itself."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in row)


def _outcome(events, batch_size):
    """(the changes in the batches produced before any error, (line, column) of the error or None),
    the batches cut as parse_orderbook_lines cuts them: a bad line drops its partial batch."""
    done, pending = [], []
    try:
        for ev in events:
            pending.append(ev)
            if batch_size is not None and len(pending) == batch_size:
                done += pending
                pending = []
    except InputError as e:
        return done, (e.line, e.column)
    return done + pending, None


_GOOD_NUM = st.sampled_from(["100", "50", "25", "200", "300", "0", "-10", "1e2", "12.5", " 40 ", "100.0", "7",
                             "inf", "0.1", "0.2", "0.3"])     # NaN is refused (tests/test_nonfinite.py)
_GOOD_LINE = st.tuples(st.sampled_from(["1.5", "2", "3.25", "4"]), st.sampled_from(["1", "2", "3", "4", "5"]),
                       st.sampled_from(["B", "S", "B", "S", "D", "F", "E", "E", "E", "X", "T", "b", " s "]),
                       _GOOD_NUM, _GOOD_NUM).map(",".join)
# a line that may be bad: garbage in a field (harmless when the action does not read it),
# a wrong field count, a blank line
_ODD_LINE = st.one_of(
    st.tuples(st.sampled_from(["1.5", "t", ""]), st.sampled_from(["1", "x", "1.5", ""]),
              st.sampled_from(["B", "S", "D", "E", "X"]), st.sampled_from(["100", "x", "", "12.5"]),
              st.sampled_from(["10", "x", "", "2.5"])).map(",".join),
    st.sampled_from(["", "   ", "1,2,B,100", "1,2,B,100,10,", "1,2,Z,100,10,5", "x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_GOOD_LINE, max_size=80), st.lists(st.tuples(st.integers(0, 80), _ODD_LINE), max_size=2),
       st.sampled_from(["bids", "asks"]), st.sampled_from([1, 3, 7]), st.booleans(),
       st.tuples(st.booleans(), st.booleans(), st.booleans()), st.sampled_from([None, 1, 2, 5]),
       st.sampled_from([None, 7, 23, 64]))
def test_vectorized_matches_per_line_reference(lines, odd, book, brokers, deterministic, int_cols, batch_size,
                                              block_size):
    """Ids reused, E after D, E that empties the order, unknown actions, both books, chunks cut
    anywhere (block_size), bad lines: the same changes, line numbers, batches and error."""
    if any(int_cols):      # integer columns: mostly whole numbers, so that the book moves
        whole = {"12.5": "12", "0.1": "1", "0.2": "2", "0.3": "3", "inf": "9", "nan": "8", "1.5": "1", "3.25": "3"}
        lines = [",".join(whole.get(f, f) for f in ln.split(",")) for ln in lines]
    lines = list(lines)
    for at, line in odd:
        lines.insert(min(at, len(lines)), line)
    cols = tuple(Column(c.name, INT if j in (0, 3, 4) and int_cols[(0, 3, 4).index(j)] else c.type)
                 for j, c in enumerate(COLS))
    d = decl(book, brokers=brokers, deterministic="yes" if deterministic else "no", cols=cols)
    want, want_err = _outcome(per_line_events(d, lines, path="log.csv"), batch_size)
    fd, path = tempfile.mkstemp(suffix=".csv")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write("\n".join(lines) + "\n")
        got, got_err = [], None
        try:
            for b in iter_orderbook(d, path, batch_size, block_size=block_size, line_numbers=True):
                got += [(ln, s, row) for ln, (s, row) in zip(b.seq.tolist(), b.rows())]
        except InputError as e:
            got_err = (e.line, e.column)
    finally:
        os.unlink(path)
    assert got_err == want_err
    assert [(ln, s, _key(r)) for ln, s, r in got] == [(ln, s, _key(r)) for ln, s, r in want]
    for _, _, row in got:
        assert all(type(v) is (int if c.type == INT else float) for v, c in zip(row, cols))


def test_random_brokers_are_the_seeded_generators_draws():
    lines = [f"{i},{i % 40},B,100,10" for i in range(5000)] + [f"{i},{i % 40},D,1,1" for i in range(100)]
    for brokers in (1, 7, 1000, 2 ** 33):
        d = decl("bids", brokers=brokers, deterministic="no")
        assert list(orderbook_events(d, lines)) == list(per_line_events(d, lines))
