"""The CSV adaptor on Apache Arrow: pyarrow's multi-threaded CSV reader parses a file, one chunk
of about 8 MB at a time (toaster.runtime.chunked: chunks cut at line breaks, rows re-cut into
batches of batch_size), into typed columns (int64, float64, date32 -> YYYYMMDD, strings left as
Arrow arrays), reading only the columns a program uses. The rules are those of
toaster.runtime.csv_source (no quoting, no trimming of strings, blanks and tabs around numbers
and dates ignored, one trailing delimiter, empty lines skipped); csv_source's line parser is
the reference this reader is tested against.

Fast path: one typed read of a chunk. A chunk Arrow rejects (a bad field, a bad line, '+5'
ints, invalid UTF-8) takes the checked path: the columns are read as strings and checked with
vectorized masks (RE2 regexes, calendar arithmetic in numpy, field counts from the newline and
delimiter positions). The first bad line is then reported exactly as the line parser reports
it (file:line:col, the line numbered in the whole file), after the batches before its batch.
"""
from __future__ import annotations

import re
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from toaster.errors import InputError
from toaster.runtime.batch import Batch
from toaster.runtime.chunked import BLOCK_SIZE, Rebatcher, chunk_views, count_breaks
from toaster.runtime.checks import days_to_yyyymmdd, nonfinite_mask, yyyymmdd_ok
from toaster.types import INT, FLOAT, DATE, STRING, BOOL

_INT_RX = r"^[+-]?[0-9]+$"
_FLOAT_RX = r"(?i)^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(inf|infinity|nan)$"
_DATE_RX = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_DAY_MIN = int(np.datetime64("0001-01-01", "D").view(np.int64))
_DAY_MAX = int(np.datetime64("9999-12-31", "D").view(np.int64))
_FIRST_LINE = re.compile(rb"[\r\n]*([^\r\n]*)")
_FAST_TYPES = {INT: pa.int64(), FLOAT: pa.float64(), DATE: pa.date32(), STRING: pa.string(), BOOL: pa.string()}


def arrow_supports(delim: str) -> bool:
    """Arrow splits on one ASCII byte; other delimiters use the line parser."""
    return len(delim) == 1 and ord(delim) < 128 and delim not in "\r\n"


class _Layout:
    """Which fields of a line the reader keeps, and their Arrow column names."""

    def __init__(self, decl, deletions: bool, trailing: bool, needed):
        self.decl = decl
        self.lead = 2 if deletions else 0
        self.want = len(decl.columns) + self.lead
        self.trailing = trailing
        self.names = [f"f{i}" for i in range(self.want + trailing)]
        self.needed = tuple(needed) if needed is not None else (True,) * len(decl.columns)
        self.read = [j for j, need in enumerate(self.needed) if need]
        self.include = (["f0", "f1"] if deletions else []) + [f"f{self.lead + j}" for j in self.read] + \
            ([self.names[-1]] if trailing else [])

    def read_csv(self, data, delim: str, types: dict, threads: bool = True, empty_lines: bool = True,
                 check_utf8: bool = True):
        """(table, whether a row was invalid). empty_lines False: an empty line is read as a
        row of empty fields instead of skipped. check_utf8 False: data is known to be valid
        UTF-8 (Arrow's check of the string columns is ~8 % of a LINEITEM parse)."""
        invalid = []

        def on_invalid(row):
            invalid.append(row)
            return "skip"
        # one thread: the chunk as one block, so each column is one Arrow chunk (to numpy without
        # a copy); threads: Arrow's 1 MB blocks, parsed in parallel
        block = {} if threads else {"block_size": len(data) + 1}
        table = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pacsv.ReadOptions(column_names=self.names, use_threads=threads, **block),
            parse_options=pacsv.ParseOptions(delimiter=delim, quote_char=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=empty_lines,
                                             invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=self.include,
                                                 null_values=[], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False, check_utf8=check_utf8))
        return table, bool(invalid)

    def types(self, fast: bool) -> dict:
        out = {n: pa.string() for n in self.include}
        if fast and self.lead:
            out["f0"] = pa.int64()          # seq
        if fast:
            for j in self.read:
                if not self.decl.columns[j].nullable:      # nullable: empty fields, read as text
                    out[f"f{self.lead + j}"] = _FAST_TYPES[self.decl.columns[j].type]
        return out


USE_THREADS = True     # Arrow parses blocks of a chunk in parallel


def read_csv_file(decl, path: str, delim: str, deletions: bool, batch_size: int | None,
                  needed=None, block_size: int | None = None) -> Iterator[Batch]:
    """Batches of decl's relation from a CSV file (whole file as one batch by default), read in
    chunks of about block_size bytes (toaster.runtime.chunked): O(chunk + batch) memory."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None
    out = Rebatcher(batch_size)
    layout = None
    line = 1                           # the file's line number of the chunk's first line
    with fh:
        for data in chunk_views(fh, block_size or BLOCK_SIZE):     # views of two reused buffers
            if layout is None:
                layout = _layout_from_first_line(decl, data, delim, deletions, needed)
                if layout is None:      # only empty lines so far
                    line += count_breaks(data)
                    continue
            good, error, lines = _read_chunk(decl, layout, data, line, delim, path)
            yield from out.add(good)
            if error is not None:
                raise error            # the rows pending in the bad line's batch are dropped
            line += lines if lines is not None else count_breaks(data)
    yield from out.finish()


def _layout_from_first_line(decl, data: bytes, delim: str, deletions: bool, needed):
    """The layout of every line, judged from the file's first non-empty line (in data), whose
    trailing delimiter, if any, every line is expected to have; None if data has no such line."""
    m = _FIRST_LINE.match(memoryview(data))
    if m.end(1) == m.start(1):
        return None
    first = m.group(1).decode("utf-8", errors="replace")
    want = len(decl.columns) + (2 if deletions else 0)
    trailing = first.count(delim) == want and first.endswith(delim)
    return _Layout(decl, deletions, trailing, needed)


def _read_chunk(decl, layout: _Layout, data, first_line: int, delim: str, path: str):
    """(Batch of the chunk's rows before its first bad line, or None; InputError for that line,
    or None; the chunk's line breaks when known without counting them, else None). data: a
    bytes-like chunk; first_line: the file's line number of its first line."""
    types = layout.types(fast=True)
    # Arrow reads an empty line as a row of empty fields, which a number or date column
    # rejects: with one of those, a chunk read without a bad row has no empty line, and its
    # rows are its lines (no line count needed)
    exact = any(t != pa.string() for t in types.values())
    try:
        table, invalid = layout.read_csv(data, delim, types, USE_THREADS, empty_lines=not exact,
                                         check_utf8=not is_ascii(data))
        if not invalid:
            columns, signs, seq, bad = _convert(layout, table, fast=True)
            if bad is None:
                return _batch(decl, signs, columns, seq), None, table.num_rows if exact else None
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        pass
    # checked path: the first bad line, if any, in file order
    data = bytes(data)
    return _checked_chunk(decl, layout, data, first_line, delim, path) + (None,)


def is_ascii(data) -> bool:
    """Whether a bytes-like chunk is all ASCII, hence valid UTF-8 (8 bytes at a time: ~0.3 ms for
    8 MB, against ~2 ms for Arrow's UTF-8 check of LINEITEM's string columns)."""
    b = np.frombuffer(data, dtype=np.uint8)
    whole = len(b) // 8 * 8
    if whole and int(np.bitwise_or.reduce(b[:whole].view(np.uint64))) & _HIGH_BITS:
        return False
    return not (b[whole:] & 0x80).any()


_HIGH_BITS = 0x8080808080808080


def _checked_chunk(decl, layout: _Layout, data: bytes, first_line: int, delim: str, path: str):
    """_read_chunk's (batch, error) for a chunk the fast path rejected."""
    lines = Lines(data, first_line)
    if lines.count == 0:
        return None, None
    bad_row = lines.first_bad_count(data, delim, layout.want)
    utf8_row, utf8_col = lines.first_bad_utf8(data)
    limit = min(bad_row, utf8_row)
    table = conv_bad = None
    if limit > 0:
        prefix = data[:lines.start(limit)] if limit < lines.count else data
        table, invalid = layout.read_csv(prefix, delim, layout.types(fast=False))
        if invalid or table.num_rows != limit:    # lines with and without a trailing delimiter
            return _read_chunk_by_lines(decl, data, lines, utf8_row, utf8_col, path)
        columns, signs, seq, conv_bad = _convert(layout, table, fast=False)
        if limit >= lines.count and conv_bad is None:
            return _batch(decl, signs, columns, seq), None
    if conv_bad is not None and conv_bad < limit:
        limit = conv_bad
    good = None
    if limit:
        columns, signs, seq, _ = _convert(layout, table.slice(0, limit), fast=False)
        good = _batch(decl, signs, columns, seq)
    lineno = lines.number(limit)
    if limit == utf8_row:
        return good, InputError(f"{decl.name}: invalid UTF-8 in the file", file=path, line=lineno, column=utf8_col)
    return good, _line_error(decl, lines.text(limit, data, errors="replace"), lineno, path)


def _read_chunk_by_lines(decl, data: bytes, lines: "Lines", utf8_row: int, utf8_col, path: str):
    """_read_chunk with the line parser (all columns converted), for the rare chunk Arrow cannot
    read with one layout."""
    from toaster.runtime.csv_source import parse_csv_lines

    def parse(upto_row: int):
        text = (data[:lines.start(upto_row)] if upto_row < lines.count else data).decode("utf-8")
        return next(iter(parse_csv_lines(decl, _split_lines(text), path=path, first_line=lines.first_line)), None)
    try:
        good = parse(utf8_row)
    except InputError as e:
        bad = lines.row_of_line(e.line)
        return (parse(bad) if bad else None), e
    if utf8_row < lines.count:
        return good, InputError(f"{decl.name}: invalid UTF-8 in the file", file=path,
                                line=lines.number(utf8_row), column=utf8_col)
    return good, None


def _split_lines(text: str):
    """Lines as Python's universal-newline reader gives them (\\n, \\r, \\r\\n)."""
    import io
    return io.StringIO(text, newline="")


def _line_error(decl, line: str, lineno: int, path: str) -> InputError:
    """The line parser's error for one bad line."""
    from toaster.runtime.csv_source import parse_csv_lines
    try:
        list(parse_csv_lines(decl, [line], path=path, first_line=lineno))
    except InputError as e:
        return e
    raise AssertionError(f"{path}:{lineno}: the checked reader found a bad line the line parser accepts")


def _batch(decl, signs, columns, seq) -> Batch:
    return Batch(decl.name, signs, tuple(columns), seq, checked=True)


def _convert(layout: _Layout, table: pa.Table, fast: bool):
    """(columns, signs, seq or None, first bad row or None) from a table read by layout."""
    n = table.num_rows
    bad = np.zeros(n, dtype=bool)
    signs = np.ones(n, dtype=np.int8)
    seq = None
    if layout.lead:
        if fast:
            seq = _np(table.column("f0")).astype(np.int64, copy=False)
        else:
            seq, ok = _from_strings(INT, table.column("f0"))
            bad |= ~ok
        signs, op_bad = _op_signs(table.column("f1"))
        bad |= op_bad
    if layout.trailing:
        bad |= _np(pc.greater(pc.binary_length(table.column(layout.names[-1])), 0))
    columns: list = [None] * len(layout.decl.columns)
    for j in layout.read:
        col = table.column(f"f{layout.lead + j}")
        t = layout.decl.columns[j].type
        if layout.decl.columns[j].nullable:
            columns[j], ok = _with_nulls(t, col)
            bad |= ~ok
            continue
        if fast and t != BOOL:
            if t == DATE:
                days = _date32_days(col)
                if len(days) and (days.min() < _DAY_MIN or days.max() > _DAY_MAX):
                    bad |= (days < _DAY_MIN) | (days > _DAY_MAX)      # year 0 or beyond 9999
                columns[j] = days_to_yyyymmdd(days)
            else:
                columns[j] = col if t == STRING else _np(col)
                if t == FLOAT:
                    bad |= nonfinite_mask(layout.decl.columns[j], columns[j])
            continue
        values, ok = _from_strings(t, col)
        columns[j] = values
        bad |= ~ok
        if t == FLOAT:
            bad |= nonfinite_mask(layout.decl.columns[j], values)
    first = int(np.argmax(bad)) if bad.any() else None
    return columns, signs, seq, first


def _op_signs(op) -> tuple[np.ndarray, np.ndarray]:
    """(signs, bad mask) of the op column: '1' insert, '0' delete, anything else bad. Read from
    the string array's bytes when every value is one byte long (the usual file)."""
    arr = op.combine_chunks() if isinstance(op, pa.ChunkedArray) else op
    if isinstance(arr, pa.StringArray) and arr.null_count == 0 and len(arr):
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=4 * arr.offset)
        if offsets[-1] - offsets[0] == len(arr) and bool(np.all(np.diff(offsets) == 1)):
            text = np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=len(arr), offset=int(offsets[0]))
            zero = text == ord("0")
            return 1 - 2 * zero.view(np.int8), ~zero & (text != ord("1"))     # int8 throughout
    signs = np.where(_np(pc.equal(op, "0")), -1, 1).astype(np.int8)
    return signs, ~_np(pc.is_in(op, value_set=pa.array(["0", "1"])))


def _date32_days(col) -> np.ndarray:
    """Day numbers (int32) of a date32 column, read through an int32 view (no datetime64 detour;
    one chunk: no copy)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    parts = [c.view(pa.int32()).to_numpy(zero_copy_only=False) for c in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0, np.int32)


_NULL_TEXT = {INT: "0", FLOAT: "0", DATE: "0001-01-01", BOOL: "false"}


def _with_nulls(t, col):
    """(Arrow array with nulls where the field is empty, ok mask) of a nullable column: an empty
    field is NULL, as in DuckDB's CSV reader (toaster.runtime.nulls makes the flags)."""
    empty = _np(pc.equal(pc.utf8_trim(col, " \t"), ""))
    if t == STRING:
        return pc.if_else(pa.array(empty), pa.scalar(None, pa.string()), col), np.ones(len(empty), dtype=bool)
    values, ok = _from_strings(t, pc.if_else(pa.array(empty), _NULL_TEXT[t], col))
    return pa.array(values, mask=empty), ok | empty


def _from_strings(t, col):
    """(values, ok mask) of a string column under the CSV rules; values are junk where not ok."""
    n = len(col)
    if t == STRING:
        return col, np.ones(n, dtype=bool)
    col = pc.utf8_trim(col, " \t")         # as Arrow's typed reader and the line parser
    if t == BOOL:
        low = pc.utf8_lower(col)
        true = _np(pc.is_in(low, value_set=pa.array(["true", "1"])))
        ok = true | _np(pc.is_in(low, value_set=pa.array(["false", "0"])))
        return true, ok
    if t == INT:
        ok = _np(pc.match_substring_regex(col, _INT_RX))
        long = ok & (_np(pc.utf8_length(col)) >= 19)
        for i in np.flatnonzero(long).tolist():          # only the 19+ digit numbers
            ok[i] = -2**63 <= int(col[i].as_py()) < 2**63
        safe = pc.if_else(pa.array(ok), pc.replace_substring_regex(col, r"^\+", ""), "0")
        return _np(pc.cast(safe, pa.int64())), ok
    if t == FLOAT:
        ok = _np(pc.match_substring_regex(col, _FLOAT_RX))
        return _np(pc.cast(pc.if_else(pa.array(ok), col, "0"), pa.float64())), ok
    if t == DATE:
        ok = _np(pc.match_substring_regex(col, _DATE_RX))
        safe = pc.if_else(pa.array(ok), col, "0001-01-01")
        part = lambda a, b: _np(pc.cast(pc.utf8_slice_codeunits(safe, a, b), pa.int64()))
        v = part(0, 4) * 10000 + part(5, 7) * 100 + part(8, 10)
        ok &= yyyymmdd_ok(v)
        return v, ok
    raise AssertionError(t)


def _np(a) -> np.ndarray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a.to_numpy(zero_copy_only=False)


class Lines:
    """Non-empty lines of a file (line breaks \\n, \\r, \\r\\n, as Python's reader), from numpy."""

    def __init__(self, data: bytes, first_line: int = 1):
        self.first_line = first_line      # the number of data's first line in its file
        b = np.frombuffer(data, dtype=np.uint8)
        cr, lf = b == 13, b == 10
        crlf = np.zeros(len(b), dtype=bool)
        if len(b) > 1:
            crlf[:-1] = cr[:-1] & lf[1:]
        lf_alone = lf.copy()
        if len(b) > 1:
            lf_alone[1:] &= ~cr[:-1]
        brk = np.flatnonzero(cr | lf_alone)
        starts = np.concatenate([[0], brk + 1 + crlf[brk]]).astype(np.int64)
        ends = np.concatenate([brk, [len(b)]]).astype(np.int64)
        keep = ends > starts
        self._starts, self._ends = starts[keep], ends[keep]
        self._numbers = np.flatnonzero(keep) + first_line
        self.count = len(self._starts)

    def start(self, row: int) -> int:
        return int(self._starts[row])

    def number(self, row: int) -> int:
        return int(self._numbers[row])

    def row_of_line(self, lineno: int) -> int:
        """The row of line number lineno (the number of rows before it)."""
        return int(np.searchsorted(self._numbers, lineno))

    def text(self, row: int, data: bytes, errors: str = "strict") -> str:
        return data[self._starts[row]:self._ends[row]].decode("utf-8", errors=errors)

    def numbers(self, rows: np.ndarray) -> np.ndarray:
        """Line numbers (int64) of these rows."""
        return self._numbers[rows].astype(np.int64)

    def span(self, row: int) -> tuple[int, int]:
        """(start, end) byte offsets of a row in data."""
        return int(self._starts[row]), int(self._ends[row])

    def field_counts(self, data: bytes, delim: str) -> np.ndarray:
        """Fields of every row (delimiters + 1)."""
        b = np.frombuffer(data, dtype=np.uint8)
        pos = np.flatnonzero(b == ord(delim))
        return np.searchsorted(pos, self._ends) - np.searchsorted(pos, self._starts) + 1

    def first_bad_count(self, data: bytes, delim: str, want: int) -> int:
        """First row whose field count is neither want nor want + a trailing delimiter."""
        b = np.frombuffer(data, dtype=np.uint8)
        fields = self.field_counts(data, delim)
        ends_with = b[self._ends - 1] == ord(delim)
        bad = (fields != want) & ~((fields == want + 1) & ends_with)
        return int(np.argmax(bad)) if bad.any() else self.count

    def first_bad_utf8(self, data: bytes) -> tuple[int, int | None]:
        """(row, 1-based character column) of the first invalid UTF-8 byte, or (count, None)."""
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            row = int(np.searchsorted(self._starts, e.start, side="right")) - 1
            col = len(data[self._starts[row]:e.start].decode("utf-8", errors="replace")) + 1
            return row, col
        return self.count, None
