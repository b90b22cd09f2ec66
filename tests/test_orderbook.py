"""The orderbook adaptor (DIALECT.md §2.3) against a plain reference model of an order book,
through the CSV-source hook, and end to end against DuckDB."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from toaster.errors import InputError
from toaster.runtime.csv_source import load_sources, read_source
from toaster.runtime.orderbook import orderbook_events, parse_orderbook_lines
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
