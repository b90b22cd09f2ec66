"""The `orderbook` adaptor (DIALECT.md §2.3): an order-book log read into one book's stream.

    CREATE STREAM bids(t float, id int, broker_id int, volume float, price float)
      FROM FILE 'orders.csv' LINE DELIMITED orderbook (book := 'bids', brokers := '10',
                                                       deterministic := 'yes');

Each input line is `t,id,action,volume,price`. The relation has five columns in this order:
(time float, order id int, broker id int, volume float, price float); names may differ.
The adaptor keeps the tuples its book currently holds, keyed by order id:

  B / S   insert (t, id, broker, volume, price) into the bids / asks book (the other book ignores it)
  D / F   delete the stored tuple of `id` if this book holds it (otherwise nothing)
  E       partial fill: delete the stored tuple of `id`, then insert it again with
          volume = stored volume - v if that is > 0. The price (and time, broker) are kept from
          the stored tuple: this follows DBToaster's Scala runtime; its OCaml interpreter also
          subtracts the price, which we consider a bug (a fill does not move the limit price).
  other   (X, C, T, ...) ignored.

Brokers: with `deterministic := 'yes'` the broker is id mod brokers; otherwise it is drawn at
random in [0, brokers) when the order is inserted, from a generator seeded by the book name so
a run is reproducible. A B/S line for an id the book already holds replaces the stored tuple
(delete, then insert), so the book never holds an id twice.
"""
from __future__ import annotations

import random
from typing import Iterable, Iterator

from toaster.errors import InputError
from toaster.runtime.batch import Batch
from toaster.schema import RelationDecl
from toaster.types import INT, FLOAT

_TRUE = ("yes", "true", "1")
_BOOK_ACTION = {"bids": "B", "asks": "S"}


def orderbook_settings(decl: RelationDecl) -> tuple[str, int, bool]:
    """(insert action 'B'|'S', brokers, deterministic) from the adaptor parameters."""
    src = decl.source
    book = (src.param("book") or "").strip().lower()
    if book not in _BOOK_ACTION:
        raise InputError(f"{decl.name}: orderbook adaptor needs book := 'bids' or 'asks' (got {book!r})")
    text = src.param("brokers", "10")
    try:
        brokers = int(text)
    except ValueError:
        brokers = 0
    if brokers <= 0:
        raise InputError(f"{decl.name}: orderbook brokers must be a positive integer (got {text!r})")
    deterministic = (src.param("deterministic", "no") or "").strip().lower() in _TRUE
    if len(decl.columns) != 5:
        raise InputError(f"{decl.name}: the orderbook adaptor needs 5 columns (time, id, broker, volume, "
                         f"price); {decl.name} has {len(decl.columns)}")
    for c, ok in zip(decl.columns, ((FLOAT, INT), (INT,), (INT,), (FLOAT, INT), (FLOAT, INT))):
        if c.type not in ok:
            raise InputError(f"{decl.name}.{c.name}: type {c.type.name.lower()} does not fit the orderbook "
                             f"adaptor's column (expected {' or '.join(t.name.lower() for t in ok)})")
    return _BOOK_ACTION[book], brokers, deterministic


def orderbook_events(decl: RelationDecl, lines: Iterable[str], *, path: str = "<input>",
                     first_line: int = 1) -> Iterator[tuple[int, int, tuple]]:
    """(line number, sign, row) for every change the log makes to decl's book, in order."""
    action_in, brokers, deterministic = orderbook_settings(decl)
    rng = random.Random(f"orderbook:{action_in}")
    cast = tuple(_caster(c.type) for c in decl.columns)
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
                             column=_column(fields, min(len(fields), 5)))
        action = fields[2].strip().upper()
        if action not in ("B", "S", "D", "F", "E"):
            continue                      # X, C, T, ...: no change to the book
        if action in ("B", "S") and action != action_in:
            continue
        oid = _parse(decl, 1, int, fields, path, lineno)
        if action in ("B", "S"):
            t = _parse(decl, 0, float, fields, path, lineno)
            vol = _parse(decl, 3, float, fields, path, lineno)
            price = _parse(decl, 4, float, fields, path, lineno)
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
        else:  # E: partial fill, price kept (Scala behaviour; see the module docstring)
            vol = _parse(decl, 3, float, fields, path, lineno)
            old = book.pop(oid, None)
            if old is None:
                continue
            yield lineno, -1, old
            left = old[3] - cast[3](vol)
            if left > 0:
                row = old[:3] + (left,) + old[4:]
                book[oid] = row
                yield lineno, 1, row


def parse_orderbook_lines(decl: RelationDecl, lines: Iterable[str], *, path: str = "<input>",
                          batch_size: int | None = None) -> Iterator[Batch]:
    """Batches of decl's book changes; at most batch_size rows each (whole log by default)."""
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    rows, signs = [], []
    for _, sign, row in orderbook_events(decl, lines, path=path):
        rows.append(row)
        signs.append(sign)
        if batch_size is not None and len(rows) >= batch_size:
            yield Batch.from_rows(decl.name, decl.types, rows, signs)
            rows, signs = [], []
    if rows:
        yield Batch.from_rows(decl.name, decl.types, rows, signs)


def iter_orderbook(decl: RelationDecl, path: str, batch_size: int | None = None) -> Iterator[Batch]:
    try:
        fh = open(path, encoding="utf-8", newline="")
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None
    with fh:
        yield from parse_orderbook_lines(decl, fh, path=path, batch_size=batch_size)


def _caster(t):
    return float if t == FLOAT else int


def _column(fields: list[str], index: int) -> int:
    return sum(len(f) + 1 for f in fields[:index]) + 1


_NAMES = ("t", "id", "action", "volume", "price")


def _parse(decl, index: int, conv, fields, path, lineno):
    # the log's field order is t,id,action,volume,price; relation columns are t,id,broker,volume,price
    field = {0: 0, 1: 1, 3: 3, 4: 4}[index]
    text = fields[field].strip()
    try:
        v = conv(text)
    except ValueError:
        raise InputError(f"{decl.name}: orderbook field {_NAMES[field]} is not a number: {text!r}",
                         file=path, line=lineno, column=_column(fields, field)) from None
    if conv is float and decl.columns[index].type != FLOAT:
        if not float(v).is_integer():
            raise InputError(f"{decl.name}.{decl.columns[index].name}: {text!r} is not an integer",
                             file=path, line=lineno, column=_column(fields, field))
    return v
