"""Reading relation sources (DIALECT.md §2.2) into Batches, and ordering batches of several streams.

    batches = read_source(decl, batch_size=1000)           # list[Batch] of one relation
    tables, streams = load_sources(decls, batch_size=1000)   # every declared source
    for b in tables + streams: engine.apply(b)
    tables, streams = open_sources(decls, batch_size=1000)   # the same, lazily (bounded memory)
    for b in itertools.chain(tables, streams): engine.apply(b)

CSV rules: lines are split on the delimiter with no quoting; strings are not trimmed (a leading
space in a string field is kept), blanks and tabs around other fields are ignored; fields are parsed by column type (int, float, date YYYY-MM-DD ->
int YYYYMMDD, string raw). With `deletions := 'true'` each line is `seq|op|col1|...`, op 1 =
insert, 0 = delete; op becomes the batch's signs and seq (an int) its `seq` array. Empty lines are skipped, a trailing '\\r' is dropped,
and one trailing delimiter (as in dbgen's `.tbl` files) is accepted. A malformed line raises
InputError naming file, line, 1-based character column and the column it was read for; the batch
holding it is rejected whole (batches before it have already been produced). The first bad
line in file order is reported.
"""
from __future__ import annotations

import datetime
import io
import os
import random
import re
from typing import Iterable, Iterator, Sequence

import numpy as np

from toaster.errors import InputError, UnsupportedError
from toaster.runtime.arrow_csv import arrow_supports, read_csv_file
from toaster.runtime.batch import Batch, NUMPY_DTYPES
from toaster.runtime.checks import nonfinite_mask, nonfinite_reason
from toaster.runtime.nulls import logical_decl, logical_needed, physical_batch
from toaster.schema import RelationDecl
from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z|[+-]?(inf|infinity|nan)\Z",
                       re.IGNORECASE)
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TRUE = ("true", "yes", "1")


def resolve_path(path: str, base_dir: str | None = None) -> str:
    """Relative paths resolve against base_dir if given, else the working directory (as DBToaster)."""
    if os.path.isabs(path) or base_dir is None:
        return path
    return os.path.join(base_dir, path)


def read_source(decl: RelationDecl, batch_size: int | None = None,
                base_dir: str | None = None, columns=None) -> list[Batch]:
    """All batches of one relation's FROM FILE source (whole file as one batch by default).
    `columns[j]` False: column j need not be converted (the batch may hold None there)."""
    return list(iter_source(decl, batch_size, base_dir, columns))


def iter_source(decl: RelationDecl, batch_size: int | None = None,
                base_dir: str | None = None, columns=None, block_size: int | None = None) -> Iterator[Batch]:
    """Parse a relation's source into batches of at most batch_size lines, lazily: the file is
    read in chunks of about block_size bytes (default toaster.runtime.chunked.BLOCK_SIZE). CSV
    files with a one-byte delimiter are read by Arrow (toaster.runtime.arrow_csv); a bad line
    raises InputError once the batches before its batch have been produced."""
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    if len(decl.columns) != len(decl.logical_columns):
        # the file holds the logical columns (an empty field of a nullable column is NULL);
        # engines get the physical ones (toaster.runtime.nulls)
        yield from (physical_batch(decl, b) for b in
                    iter_source(logical_decl(decl), batch_size, base_dir, logical_needed(decl, columns),
                                block_size))
        return
    src = decl.source
    if src is None:
        raise InputError(f"relation {decl.name} has no FROM FILE source")
    if src.adaptor == "orderbook":
        from toaster.runtime.orderbook import iter_orderbook
        yield from iter_orderbook(decl, resolve_path(src.path, base_dir), batch_size)
        return
    if src.adaptor != "csv":
        raise UnsupportedError(f"adaptor {src.adaptor!r} (only CSV is supported)")
    path = resolve_path(src.path, base_dir)
    delim, deletions = csv_settings(decl)
    if arrow_supports(delim):
        yield from read_csv_file(decl, path, delim, deletions, batch_size, columns, block_size)
        return
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None
    with fh:
        yield from parse_csv_lines(decl, _checked_utf8(fh, path, decl.name, block_size), path=path,
                                   batch_size=batch_size)


def _checked_utf8(fh, path: str, name: str, block_size: int | None = None) -> Iterator[str]:
    """The file's lines, read chunk by chunk; at invalid UTF-8, the lines before the bad one,
    then InputError (file:line:col); the line parser drops the batch they began."""
    from toaster.runtime.arrow_csv import Lines
    from toaster.runtime.chunked import BLOCK_SIZE, byte_chunks
    for data, first_line in byte_chunks(fh, block_size or BLOCK_SIZE):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            lines = Lines(data, first_line)
            row, col = lines.first_bad_utf8(data)
            yield from io.StringIO(data[:lines.start(row)].decode("utf-8"), newline="")
            raise InputError(f"{name}: invalid UTF-8 in the file", file=path, line=lines.number(row),
                             column=col) from None
        yield from io.StringIO(text, newline="")


def csv_settings(decl: RelationDecl) -> tuple[str, bool]:
    """(delimiter, deletions) from the adaptor parameters; 'fields' is an alias of 'delimiter'."""
    src = decl.source
    delim = src.param("delimiter", None) if src else None
    if delim is None and src is not None:
        delim = src.param("fields", None)
    if delim is None:
        delim = ","
    if delim == "":
        raise InputError(f"{decl.name}: empty CSV delimiter")
    deletions = (src.param("deletions", "false") if src else "false").strip().lower() in _TRUE
    return delim, deletions


def parse_csv_lines(decl: RelationDecl, lines: Iterable[str], *, path: str = "<input>",
                    batch_size: int | None = None, first_line: int = 1) -> Iterator[Batch]:
    """Parse text lines (with or without line endings) into Batches of decl's relation."""
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    delim, deletions = csv_settings(decl)
    pending: list[tuple[int, str]] = []
    for lineno, raw in enumerate(lines, start=first_line):
        line = raw.rstrip("\n")
        if line.endswith("\r"):
            line = line[:-1]
        if line == "":
            continue
        pending.append((lineno, line))
        if batch_size is not None and len(pending) >= batch_size:
            yield _parse_batch(decl, pending, delim, deletions, path)
            pending = []
    if pending:
        yield _parse_batch(decl, pending, delim, deletions, path)


def _parse_batch(decl: RelationDecl, lines, delim: str, deletions: bool, path: str) -> Batch:
    ncols = len(decl.columns)
    lead = 2 if deletions else 0
    want = ncols + lead
    signs = np.ones(len(lines), dtype=np.int8)
    seq = np.zeros(len(lines), dtype=np.int64) if deletions else None
    fields_by_col: list[list[str]] = [[] for _ in range(ncols)]
    for i, (lineno, line) in enumerate(lines):
        fields = line.split(delim)
        if len(fields) == want + 1 and fields[-1] == "":
            fields.pop()          # one trailing delimiter, as dbgen writes
        if len(fields) != want:
            _raise_field_error(decl, lines[:i], delim, lead, path)     # an earlier line first
            _field_count_error(decl, path, lineno, line, fields, want, lead, delim)
        if deletions:
            try:
                seq[i] = parse_field(INT, fields[0])
            except ValueError as e:
                _raise_field_error(decl, lines[:i], delim, lead, path)
                raise InputError(f"{decl.name}: bad sequence number in field 1 ({e})",
                                 file=path, line=lineno, column=1) from None
            op = fields[1]
            if op == "1":
                pass
            elif op == "0":
                signs[i] = -1
            else:
                _raise_field_error(decl, lines[:i], delim, lead, path)
                raise InputError(f"{decl.name}: bad operation {op!r} in field 2 (expected 1 = insert, 0 = delete)",
                                 file=path, line=lineno, column=_field_column(fields, 1, delim))
        for j in range(ncols):
            fields_by_col[j].append(fields[lead + j])
    columns = []
    for j, col in enumerate(decl.columns):
        try:
            columns.append(_convert_column(col.type, fields_by_col[j], col.nullable, col))
        except (ValueError, OverflowError):
            columns.append(None)       # located below, row by row
    if any(c is None for c in columns):
        _locate_bad_field(decl, lines, delim, lead, path)
    return Batch(decl.name, signs, tuple(columns), seq)


def _convert_column(t: Type, texts: list[str], nullable: bool = False, column=None) -> np.ndarray:
    if nullable:       # an empty field is NULL (None), as in DuckDB's CSV reader
        arr = np.empty(len(texts), dtype=object)
        arr[:] = [None if not s.strip(" \t") else parse_field(t, s, column) for s in texts]
        return arr
    dtype = NUMPY_DTYPES[t]
    if t == STRING:
        arr = np.empty(len(texts), dtype=object)
        arr[:] = texts
        return arr
    return np.array([parse_field(t, s, column) for s in texts], dtype=dtype)


def parse_field(t: Type, text: str, column=None):
    """One field of type t from its CSV text; ValueError if malformed. Blanks and tabs around
    a number, date or bool are ignored (as Arrow's CSV reader does); strings are kept raw. A
    FLOAT of a `column` refuses what toaster.runtime.checks.nonfinite_mask refuses."""
    if t != STRING:
        text = text.strip(" \t")
    if t == INT:
        if not _INT_RE.match(text):
            raise ValueError(f"not an int: {text!r}")
        v = int(text)
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError(f"int out of 64-bit range: {text!r}")
        return v
    if t == FLOAT:
        if not _FLOAT_RE.match(text):
            raise ValueError(f"not a float: {text!r}")
        v = float(text)
        if column is not None and nonfinite_mask(column, np.array([v])).any():
            raise ValueError(f"{text!r}: {nonfinite_reason(v)}")
        return v
    if t == DATE:
        m = _DATE_RE.match(text)
        if not m:
            raise ValueError(f"not a date (YYYY-MM-DD): {text!r}")
        y, mo, d = (int(g) for g in m.groups())
        try:
            datetime.date(y, mo, d)
        except ValueError:
            raise ValueError(f"not a date (YYYY-MM-DD): {text!r} is not a calendar day") from None
        return y * 10000 + mo * 100 + d
    if t == STRING:
        return text
    if t == BOOL:
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ValueError(f"not a bool: {text!r}")
    raise ValueError(f"unknown type {t}")


def _field_column(fields: list[str], index: int, delim: str) -> int:
    """1-based character column where fields[index] starts (or would start)."""
    return sum(len(f) + len(delim) for f in fields[:index]) + 1


def _field_count_error(decl, path, lineno, line, fields, want, lead, delim):
    if len(fields) > want:
        col = _field_column(fields, want, delim)
        msg = f"{decl.name}: too many fields ({len(fields)}, expected {want})"
    else:
        col = len(line) + 1
        missing = len(fields) - lead
        name = decl.columns[missing].name if missing >= 0 else ("op" if len(fields) == 1 else "seq")
        msg = f"{decl.name}: too few fields ({len(fields)}, expected {want}); missing column {name}"
    raise InputError(msg, file=path, line=lineno, column=col)


def _locate_bad_field(decl, lines, delim, lead, path):
    """Raise InputError for the first malformed field, scanning in file order."""
    _raise_field_error(decl, lines, delim, lead, path)
    raise AssertionError("a column failed to convert but no field is malformed")  # unreachable


def _raise_field_error(decl, lines, delim, lead, path):
    """Raise InputError for the first malformed field of these (well-counted) lines, if any."""
    for lineno, line in lines:
        fields = line.split(delim)
        for j, col in enumerate(decl.columns):
            text = fields[lead + j]
            if col.nullable and not text.strip(" \t"):
                continue           # NULL
            try:
                parse_field(col.type, text, col)
            except (ValueError, OverflowError) as e:
                raise InputError(f"{decl.name}.{col.name}: {e}", file=path, line=lineno,
                                 column=_field_column(fields, lead + j, delim)) from None


# ----------------------------------------------------------------------------- several sources
def load_sources(decls: Sequence[RelationDecl], batch_size: int | None = None,
                 base_dir: str | None = None, seed: int | None = None, *,
                 relations_used=None, columns=None) -> tuple[list[Batch], list[Batch]]:
    """(table batches, stream batches in feed order) for every relation that has a source: the
    lists of open_sources' batches (which see)."""
    tables, streams = open_sources(decls, batch_size, base_dir, seed, relations_used=relations_used,
                                   columns=columns)
    return list(tables), list(streams)


def open_sources(decls: Sequence[RelationDecl], batch_size: int | None = None,
                 base_dir: str | None = None, seed: int | None = None, *,
                 relations_used=None, columns=None, block_size: int | None = None,
                 steps: bool = False) -> tuple[Iterator, Iterator]:
    """(table batches, stream batches in feed order), produced lazily as they are consumed, the
    files read in chunks (O(chunk + batch) memory per source, not O(file)). Missing files and
    bad adaptor settings raise InputError here, before any batch; a bad line raises InputError
    when the batches before its batch have been produced.

    Tables are loaded whole before any stream event (DIALECT.md §2.1). CSV streams with
    deletions carry sequence numbers: together they are fed in the order of those numbers, in
    windows of batch_size events (toaster.runtime.stream_order), at the place of the first of
    them. Other streams are fed in file order, one after the other in declaration order, or in a
    seeded random interleaving of their batches (the sequence-ordered streams then take part as
    one stream). Streams that read the same file take turns batch by batch (the file is read in
    order, once per relation).

    `relations_used`: names of the relations to read (others are skipped, e.g.
    engine.relations_needed()); `columns`: a function relation name -> per-column flags of the
    columns to convert (e.g. engine.columns_needed); by default everything is read.
    `steps`: yield lists of Batches to apply as one step (`Engine.apply_many`): a window of the
    sequence-ordered streams is one step (a Batch per relation it touches: the spark engine runs
    it as one job), every other batch a step of its own.
    """
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    used = None if relations_used is None else {r.upper() for r in relations_used}
    tables: list[tuple] = []
    by_file: dict = {}             # streams reading one file form one stream
    sequenced: list[tuple] = []    # streams with sequence numbers
    for d in decls:
        if d.source is None or (used is not None and d.name not in used):
            continue
        _check_readable(d, base_dir)
        read = (d, columns(d.name) if columns is not None else None)
        if d.kind == "table":
            tables.append(read)
        elif d.source.adaptor == "csv" and csv_settings(d)[1]:
            if not sequenced:
                by_file[_SEQUENCED] = []           # their place in declaration order
            sequenced.append(read)
        else:
            key = os.path.abspath(resolve_path(d.source.path, base_dir))
            by_file.setdefault(key, []).append(read)

    def source(d, cols, size):
        return iter_source(d, size, base_dir, cols, block_size)

    def table_batches():
        for d, cols in tables:
            for b in source(d, cols, None):
                yield [b] if steps else b
    streams = []
    for key, group in by_file.items():
        if key is _SEQUENCED:
            streams.append(_in_seq_order(sequenced, batch_size, source, steps))
        else:
            batches = _round_robin([source(d, cols, batch_size) for d, cols in group])
            streams.append(([b] for b in batches) if steps else batches)
    return table_batches(), interleave(streams, seed=seed)


_SEQUENCED = object()     # the by_file key standing for the sequence-ordered streams
_SEQ_PIECE_ROWS = 1 << 12  # at least this many rows per piece a sequence-ordered stream is read in


def _check_readable(decl: RelationDecl, base_dir: str | None) -> None:
    """Settings and file errors before the first event rather than in the middle of the feed."""
    src = decl.source
    if src.adaptor == "csv":
        csv_settings(decl)
    elif src.adaptor != "orderbook":
        raise UnsupportedError(f"adaptor {src.adaptor!r} (only CSV is supported)")
    path = resolve_path(src.path, base_dir)
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None


def _in_seq_order(reads, batch_size: int | None, source, steps: bool = False) -> Iterator:
    """The sequence-ordered streams' events in windows of batch_size (stream_order): merged
    piece by piece; with no batch size, one window of every event (whole files, as that is).
    Each window's Batches one by one, or (`steps`) each window as one list."""
    from toaster.runtime.stream_order import cut_windows, merge_by_seq, merge_windows
    if batch_size is None:
        whole = [b for d, cols in reads for b in source(d, cols, None)]
        windows = cut_windows(whole, *merge_by_seq([b.seq for b in whole]), None)
    else:
        windows = merge_windows([source(d, cols, max(batch_size, _SEQ_PIECE_ROWS)) for d, cols in reads],
                                batch_size)
    for window in windows:
        if steps:
            if window:
                yield list(window)
        else:
            yield from window


def _round_robin(per_relation: list[Iterable[Batch]]) -> Iterator[Batch]:
    """Relations reading the same file see its lines in file order: batch i of each in turn."""
    iters = [iter(b) for b in per_relation]
    while iters:
        alive = []
        for it in iters:
            b = next(it, None)
            if b is not None:
                alive.append(it)
                yield b
        iters = alive


def interleave(streams: Sequence[Iterable[Batch]], seed: int | None = None) -> Iterator[Batch]:
    """The order in which batches of several streams are fed.

    Without a seed: all of stream 1, then all of stream 2, ... (file order). With a seed: a
    random interleaving that keeps each stream's own batches in order.
    """
    if seed is None:
        for s in streams:
            yield from s
        return
    rng = random.Random(seed)
    iters = [iter(s) for s in streams]
    heads = []
    for it in iters:
        heads.append(next(it, None))
    live = [i for i, h in enumerate(heads) if h is not None]
    while live:
        i = rng.choice(live)
        yield heads[i]
        heads[i] = next(iters[i], None)
        if heads[i] is None:
            live.remove(i)
