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
a run is reproducible (the draws of Python's `random.Random(f"orderbook:{B|S}").randrange`,
one per insert line, made by numpy's MT19937 from the same state). A B/S line for an id the
book already holds replaces the stored tuple (delete, then insert), so the book never holds an
id twice. Numbers follow the CSV adaptor's rules (toaster.runtime.csv_source.parse_field).

Vectorized: Arrow's CSV reader parses a chunk of the log (typed; a chunk it rejects is read as
text and checked with vectorized masks), and the book's changes are derived with numpy: the
state machine is independent per order id, so the events are sorted by id (stably) and cut into
segments that each begin at an insert; within a segment the volume after each fill is the
previous one minus the fill (subtracted in turn, round by round over all segments at once, so
the floating-point results are those of one-by-one replay), and the segment's order is gone
after its first delete or emptying fill. The book left at the end of a chunk is carried into
the next one. The first bad line is reported as file:line:col after the batches before its
batch, as by the CSV adaptor.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from toaster.errors import InputError
from toaster.runtime import arrow_csv
from toaster.runtime.batch import Batch
from toaster.runtime.checks import nonfinite_mask, nonfinite_reason
from toaster.runtime.chunked import BLOCK_SIZE, Rebatcher, byte_chunks
from toaster.schema import RelationDecl
from toaster.types import INT, FLOAT

_TRUE = ("yes", "true", "1")
_BOOK_ACTION = {"bids": "B", "asks": "S"}
_NAMES = ("t", "id", "action", "volume", "price")
_ACTIONS = pa.array(["B", "S", "D", "F", "E"])
_INS, _DEL, _FILL, _SKIP = 0, 1, 2, 3
_INT64_LIMIT = float(2 ** 63)


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


# ----------------------------------------------------------------------------- public readers
def iter_orderbook(decl: RelationDecl, path: str, batch_size: int | None = None, *,
                   block_size: int | None = None, line_numbers: bool = False) -> Iterator[Batch]:
    """Batches of decl's book changes from the log file at path (whole log as one batch by
    default), read in chunks of about block_size bytes. line_numbers: each change's line
    number in Batch.seq."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None
    with fh:
        yield from _read(decl, byte_chunks(fh, block_size or BLOCK_SIZE), path, batch_size, line_numbers)


def parse_orderbook_lines(decl: RelationDecl, lines: Iterable[str], *, path: str = "<input>",
                          batch_size: int | None = None, line_numbers: bool = False) -> Iterator[Batch]:
    """Batches of decl's book changes from text lines (with or without line endings)."""
    text = "".join(ln if ln.endswith(("\n", "\r")) else ln + "\n" for ln in lines)
    return _read(decl, iter([(text.encode("utf-8"), 1)]), path, batch_size, line_numbers)


def orderbook_events(decl: RelationDecl, lines: Iterable[str], *, path: str = "<input>"
                     ) -> Iterator[tuple[int, int, tuple]]:
    """(line number, sign, row) for every change the log makes to decl's book, in order (a
    Python view of parse_orderbook_lines, for tests and debugging)."""
    for b in parse_orderbook_lines(decl, lines, path=path, line_numbers=True):
        yield from ((ln, s, row) for ln, (s, row) in zip(b.seq.tolist(), b.rows()))


def _read(decl, chunks, path: str, batch_size: int | None, line_numbers: bool) -> Iterator[Batch]:
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    reader = _Reader(decl, path, line_numbers)
    out = Rebatcher(batch_size)
    for data, first_line in chunks:
        good, error = reader.chunk(data, first_line)
        yield from out.add(good)
        if error is not None:
            raise error                # the changes pending in the bad line's batch are dropped
    yield from out.finish()


# ----------------------------------------------------------------------------- one chunk
@dataclass(frozen=True)
class _Parsed:
    """A chunk's lines before its first bad one: action code, the fields, and each row's line."""
    action: np.ndarray           # index into _ACTIONS, -1 for any other action
    oid: np.ndarray
    t: np.ndarray
    vol: np.ndarray
    price: np.ndarray
    ok: tuple                    # (t, id, volume, price) parse masks, or None when all parsed
    lines: "arrow_csv.Lines | None"
    row_line: np.ndarray | None  # row -> index in `lines` (None: row i is non-empty line i)


class _Reader:
    def __init__(self, decl, path: str, line_numbers: bool):
        self.decl, self.path, self.line_numbers = decl, path, line_numbers
        self.action_in, brokers, deterministic = orderbook_settings(decl)
        self.brokers = _Brokers(self.action_in, brokers, deterministic)
        self.int_cols = tuple(c.type == INT for c in decl.columns)
        dt = [np.int64 if is_int else np.float64 for is_int in self.int_cols]
        self.book = _Book.empty(dt[0], dt[3], dt[4])

    def chunk(self, data: bytes, first_line: int):
        """(Batch of the changes made by the chunk's lines before its first bad line, or None;
        InputError for that line, or None)."""
        parsed, error_row = self._parse(data, first_line)
        if parsed is None:
            return None, error_row
        code = parsed.action
        kind = np.full(len(code), _SKIP, dtype=np.int8)
        kind[code == "BS".index(self.action_in)] = _INS
        kind[(code == 2) | (code == 3)] = _DEL
        kind[code == 4] = _FILL
        n, error = self._first_bad(parsed, kind, data, first_line)
        rows = np.flatnonzero(kind[:n] != _SKIP)
        k = kind[rows]
        oid = parsed.oid[rows]
        ins, fill = k == _INS, k == _FILL
        # fields a line's action does not read may hold anything: zeros there
        t, vol, price = (self._typed(np.where(need, a[rows], 0), j) for a, j, need in
                         ((parsed.t, 0, ins), (parsed.vol, 3, ins | fill), (parsed.price, 4, ins)))
        broker = np.zeros(len(rows), dtype=np.int64)
        broker[ins] = self.brokers.draw(oid[ins])
        pos, sign, cols, self.book = _changes(self.book, k, oid, t, vol, price, broker)
        if error is None:
            error = error_row
        if not len(sign):
            return None, error
        seq = None
        if self.line_numbers:
            lines = parsed.lines if parsed.lines is not None else arrow_csv.Lines(data, first_line)
            li = rows[pos] if parsed.row_line is None else parsed.row_line[rows[pos]]
            seq = lines.numbers(li)
        return Batch(self.decl.name, sign, cols, seq, checked=True), error

    def _typed(self, a: np.ndarray, j: int) -> np.ndarray:
        return a.astype(np.int64) if self.int_cols[j] else a

    def _parse(self, data: bytes, first_line: int):
        """(_Parsed or None, InputError at the first line that is not 5 fields / not UTF-8, or None)."""
        types = {"f0": pa.float64(), "f1": pa.int64(), "f2": pa.string(), "f3": pa.float64(), "f4": pa.float64()}
        try:
            table, invalid = _read_csv(data, types, arrow_csv.USE_THREADS)
            if not invalid:
                if table.num_rows == 0:
                    return None, None
                cols = [arrow_csv._np(table.column(f"f{i}")) for i in (0, 1, 3, 4)]
                return _Parsed(_action_codes(table.column("f2")), cols[1], cols[0], cols[2], cols[3],
                               None, None, None), None
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
            pass
        return self._parse_checked(data, first_line)

    def _parse_checked(self, data: bytes, first_line: int):
        """The chunk read as text: blank lines dropped, the first line that is not five fields
        (or not UTF-8) located with numpy, the fields parsed by the CSV rules with masks."""
        lines = arrow_csv.Lines(data, first_line)
        if lines.count == 0:
            return None, None
        fields = lines.field_counts(data, ",")
        blank, limit = [], lines.count
        for r in np.flatnonzero(fields != 5).tolist():     # only the lines of the wrong width
            if lines.text(r, data, errors="replace").strip() != "":
                limit = r
                break
            blank.append(r)
        utf8_row, utf8_col = lines.first_bad_utf8(data)
        error = None
        if utf8_row < limit:
            limit = utf8_row
            error = InputError(f"{self.decl.name}: invalid UTF-8 in the file", file=self.path,
                               line=lines.number(limit), column=utf8_col)
        elif limit < lines.count:
            error = self._line_error(lines.text(limit, data), lines.number(limit))
        keep = np.ones(limit, dtype=bool)
        buf = bytearray(data[:lines.start(limit)] if limit < lines.count else data)
        for r in blank:
            if r < limit:            # a blank line becomes empty lines, which Arrow skips
                keep[r] = False
                start, end = lines.span(r)
                buf[start:end] = b"\n" * (end - start)
        row_line = np.flatnonzero(keep)
        if not len(row_line):
            return None, error
        table, invalid = _read_csv(bytes(buf), {f"f{i}": pa.string() for i in range(5)}, False)
        assert not invalid and table.num_rows == len(row_line), "orderbook: line split disagrees with Arrow's"
        oid, ok_id = arrow_csv._from_strings(INT, table.column("f1"))
        parsed = [arrow_csv._from_strings(FLOAT, table.column(f"f{i}")) for i in (0, 3, 4)]
        (t, ok_t), (vol, ok_vol), (price, ok_price) = parsed
        return _Parsed(_action_codes(table.column("f2")), oid, t, vol, price, (ok_t, ok_id, ok_vol, ok_price),
                       lines, row_line), error

    def _first_bad(self, parsed: _Parsed, kind: np.ndarray, data: bytes, first_line: int):
        """(rows before the first row whose needed fields do not parse, its InputError or None)."""
        ins, fill = kind == _INS, kind == _FILL
        need = {0: ins, 1: kind != _SKIP, 3: ins | fill, 4: ins}
        bad = np.zeros(len(kind), dtype=bool)
        if parsed.ok is not None:
            for j, ok in zip((0, 1, 3, 4), parsed.ok):
                bad |= need[j] & ~ok
        for j, a in ((0, parsed.t), (3, parsed.vol), (4, parsed.price)):
            if self.int_cols[j]:       # an integer column: the number must be a 64-bit integer
                with np.errstate(invalid="ignore"):
                    whole = (np.floor(a) == a) & (a >= -_INT64_LIMIT) & (a < _INT64_LIMIT)
                bad |= need[j] & ~whole
            else:              # NaN, and an infinity a summed column refuses (runtime.checks)
                bad |= need[j] & nonfinite_mask(self.decl.columns[j], a)
        if not bad.any():
            return len(kind), None
        row = int(np.argmax(bad))
        lines = parsed.lines if parsed.lines is not None else arrow_csv.Lines(data, first_line)
        li = row if parsed.row_line is None else int(parsed.row_line[row])
        return row, self._line_error(lines.text(li, data), lines.number(li))

    def _line_error(self, line: str, lineno: int) -> InputError:
        """The error of one bad line, checked field by field in the order of the adaptor's rule."""
        decl, path = self.decl, self.path
        fields = line.split(",")
        if len(fields) != 5:
            return InputError(f"{decl.name}: orderbook line has {len(fields)} fields, expected 5 "
                              "(t,id,action,volume,price)", file=path, line=lineno,
                              column=_column(fields, min(len(fields), 5)))
        action = fields[2].strip().upper()
        order = (1, 0, 3, 4) if action == self.action_in else (1, 3) if action == "E" else (1,)
        from toaster.runtime.csv_source import parse_field
        for j in order:
            text = fields[j].strip(" \t")
            try:
                v = parse_field(INT if j == 1 else FLOAT, text)
            except ValueError:
                return InputError(f"{decl.name}: orderbook field {_NAMES[j]} is not a number: {text!r}",
                                  file=path, line=lineno, column=_column(fields, j))
            if j != 1 and self.int_cols[j] and not (float(v).is_integer() and -2 ** 63 <= v < 2 ** 63):
                return InputError(f"{decl.name}.{decl.columns[j].name}: {text!r} is not a 64-bit integer",
                                  file=path, line=lineno, column=_column(fields, j))
            if j != 1 and not self.int_cols[j] and nonfinite_mask(decl.columns[j], np.array([v])).any():
                return InputError(f"{decl.name}.{decl.columns[j].name}: {text!r}: {nonfinite_reason(v)}",
                                  file=path, line=lineno, column=_column(fields, j))
        raise AssertionError(f"{path}:{lineno}: the vectorized check found a bad line the line check accepts")


def _read_csv(data: bytes, types: dict, threads: bool):
    invalid = []

    def on_invalid(row):
        invalid.append(row)
        return "skip"
    table = pacsv.read_csv(
        pa.BufferReader(data),
        read_options=pacsv.ReadOptions(column_names=[f"f{i}" for i in range(5)], use_threads=threads),
        parse_options=pacsv.ParseOptions(delimiter=",", quote_char=False, escape_char=False,
                                         newlines_in_values=False, ignore_empty_lines=True,
                                         invalid_row_handler=on_invalid),
        convert_options=pacsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                             quoted_strings_can_be_null=False, check_utf8=True))
    return table, bool(invalid)


def _action_codes(col) -> np.ndarray:
    """Index of each line's action (stripped, upper-cased) in _ACTIONS; -1 for the others."""
    code = pc.index_in(pc.utf8_upper(pc.utf8_trim_whitespace(col)), value_set=_ACTIONS)
    return arrow_csv._np(pc.fill_null(code, -1)).astype(np.int8)


def _column(fields: list[str], index: int) -> int:
    return sum(len(f) + 1 for f in fields[:index]) + 1


# ----------------------------------------------------------------------------- the book's changes
@dataclass(frozen=True)
class _Book:
    """The tuples a book holds (one per order id), carried from one chunk to the next."""
    oid: np.ndarray
    t: np.ndarray
    broker: np.ndarray
    vol: np.ndarray
    price: np.ndarray

    @staticmethod
    def empty(t_dtype, vol_dtype, price_dtype) -> "_Book":
        return _Book(np.empty(0, np.int64), np.empty(0, t_dtype), np.empty(0, np.int64),
                     np.empty(0, vol_dtype), np.empty(0, price_dtype))


def _changes(book: _Book, kind, oid, t, vol, price, broker):
    """(position of each change's line among the given events, signs, the changes' columns
    (t, id, broker, volume, price), the book after them) for events in file order."""
    m, n = len(book.oid), len(kind)
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int8), (), book
    # the held tuples come first as silent inserts, so each id's history starts from its tuple
    K = np.concatenate([np.full(m, _INS, np.int8), kind])
    order = np.argsort(np.concatenate([book.oid, oid]), kind="stable")
    K = K[order]
    I, T, B, V, P = (np.concatenate([a, b])[order] for a, b in
                     ((book.oid, oid), (book.t, t), (book.broker, broker), (book.vol, vol), (book.price, price)))
    N = m + n
    new_id = np.ones(N, dtype=bool)
    new_id[1:] = I[1:] != I[:-1]
    starts = new_id | (K == _INS)
    seg = np.cumsum(starts) - 1
    head = np.flatnonzero(starts)
    h = head[seg]                                  # each event's segment head
    is_fill = K == _FILL
    x = _volumes_after(V, is_fill, np.arange(N) - h)
    with np.errstate(invalid="ignore"):
        empties = is_fill & ~(x > 0)
    kill = (K == _DEL) | empties
    kill[starts] = False
    kills = np.cumsum(kill)
    alive_after = (K[h] == _INS) & (kills == kills[h])   # a segment before an id's first insert holds nothing
    alive_before = np.zeros(N, dtype=bool)
    alive_before[1:] = alive_after[:-1] & ~new_id[1:]
    real = order >= m
    with np.errstate(invalid="ignore"):
        emit_ins = real & ((K == _INS) | (is_fill & alive_before & (x > 0)))
    emit_del = real & alive_before
    # changes in file order: a line's delete (slot 2p) before its insert (slot 2p + 1)
    p = order - m
    hp = np.empty(N, dtype=np.int64)               # the head of the previous event's segment
    hp[1:] = h[:-1]
    hp[0] = 0
    xp = np.empty_like(x)
    xp[1:] = x[:-1]
    xp[:1] = 0
    slots = np.concatenate([2 * p[emit_del], 2 * p[emit_ins] + 1])
    sort = np.argsort(slots, kind="stable")
    d_idx, i_idx = np.flatnonzero(emit_del), np.flatnonzero(emit_ins)
    src_h = np.concatenate([hp[d_idx], h[i_idx]])[sort]
    cols = (T[src_h], np.concatenate([I[d_idx], I[i_idx]])[sort], B[src_h],
            np.concatenate([xp[d_idx], x[i_idx]])[sort], P[src_h])
    signs = np.concatenate([np.full(len(d_idx), -1, np.int8), np.ones(len(i_idx), np.int8)])[sort]
    pos = slots[sort] // 2
    last = np.ones(N, dtype=bool)
    last[:-1] = new_id[1:]
    held = np.flatnonzero(last & alive_after)
    hh = h[held]
    return pos, signs, cols, _Book(I[held], T[hh], B[hh], x[held], P[hh])


def _volumes_after(V: np.ndarray, is_fill: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each event's volume after it: the segment's insert volume minus its fills so far, one
    subtraction at a time (round r does the r-th event of every segment)."""
    x = V.copy()
    if not len(x):
        return x
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(1, int(rank.max()) + 2))
    for r in range(1, len(bounds)):
        idx = by_rank[bounds[r - 1]:bounds[r]]
        prev = x[idx - 1]
        if x.dtype == np.int64:
            with np.errstate(over="ignore"):
                left = prev - V[idx]
            over = is_fill[idx] & ((prev ^ V[idx]) < 0) & ((left ^ prev) < 0)
            if over.any():
                raise InputError("orderbook: a fill takes an integer volume out of the 64-bit range")
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                left = prev - V[idx]
        x[idx] = np.where(is_fill[idx], left, prev)
    return x


class _Brokers:
    """Each inserted order's broker: id mod brokers, or the seeded generator's next draw."""

    def __init__(self, action_in: str, brokers: int, deterministic: bool):
        self.n, self.deterministic = brokers, deterministic
        if deterministic:
            return
        self._rng = random.Random(f"orderbook:{action_in}")
        self._mt = None
        if brokers < 2 ** 32:          # randrange(n) = the first 32-bit draw >> (32 - k) that is < n
            state = self._rng.getstate()[1]
            self._mt = np.random.MT19937()
            self._mt.state = {"bit_generator": "MT19937",
                              "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]}}
            self._shift = 32 - brokers.bit_length()
            self._ready = np.empty(0, dtype=np.int64)

    def draw(self, oid: np.ndarray) -> np.ndarray:
        if self.deterministic:
            return np.mod(oid, self.n)
        k = len(oid)
        if self._mt is None:
            return np.array([self._rng.randrange(self.n) for _ in range(k)], dtype=np.int64)
        while len(self._ready) < k:
            raw = (self._mt.random_raw(max(2 * (k - len(self._ready)), 1024)) >> self._shift).astype(np.int64)
            self._ready = np.concatenate([self._ready, raw[raw < self.n]])
        out, self._ready = self._ready[:k], self._ready[k:]
        return out
