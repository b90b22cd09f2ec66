"""`--run --backend spark --spark-input executors`: the streams' FROM FILE sources cut into the
steps `--batch-size` gives with driver input, as byte ranges the executors' tasks read and parse.

The driver never parses a row. It finds where rows start with numpy over a memory map of each
file (a row is a non-empty line; breaks \\n, \\r, \\r\\n, as the CLI's reader counts them): one
`b == 10` pass per 16 MB piece in the usual file without '\\r'. Independent streams are cut every
N rows per relation (relations reading one file take turns, as open_sources has them);
sequence-ordered streams (`deletions := 'true'`) are merged by their sequence numbers exactly as
toaster.runtime.stream_order merges them (the same function, merge_by_seq, on the same keys),
and since that merge keeps each file's order, a window of N events is a run of consecutive rows
of each file it touches: again one byte range per relation. The sequence numbers are the one
field the driver reads, digit by digit over all rows at once (numpy, no Python per row; the few
fields that are not plain digits go through the line parser's int rule).

A step is a list of `ByteRanges` (one per relation, in the order driver input would apply its
Batches: len() is its rows, so toaster.checkpoint.InputPosition counts it as that Batch), each
split into up to P pieces `(path, start, end, first line number)` of at least MIN_PIECE_ROWS
rows; SparkEngine.apply_frames runs a task per piece (`read_piece`: the CLI's own Arrow reader,
so a bad row's message is the driver reader's, its line numbered in the whole file).
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import numpy as np

from toaster.errors import InputError, UnsupportedError

SCAN_BYTES = 16 << 20      # bytes of a file looked at per numpy pass (memory O(this), not O(file))
MIN_PIECE_ROWS = 8192      # fewer rows are not worth a task of their own


@dataclass(frozen=True)
class ByteRanges:
    """Rows of one relation's source as byte ranges of its file: a batch the executors read."""
    relation: str
    rows: int
    pieces: tuple          # ((path, start byte, end byte, number of the first line), ...)

    def __len__(self) -> int:
        return self.rows


# ------------------------------------------------------------------ where the rows start
def _scan(path: str, delim: bytes | None = None):
    """(starts, line numbers, first fields or None) of the file's rows, one numpy pass per piece
    of about SCAN_BYTES: int64 arrays of absolute byte offsets and 1-based line numbers; with
    `delim`, each row's first field as (int64 values, ok mask) where ok is False for a field
    that is not plain digits (the caller decides those)."""
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        lo, line = 0, 1
        while lo < size:
            hi = min(lo + SCAN_BYTES, size)
            while hi < size:                 # end the piece after its last '\n' (a '\r\n' whole)
                cut = mm.rfind(b"\n", lo, hi)
                if cut >= 0:
                    hi = cut + 1
                    break
                hi = min(hi + SCAN_BYTES, size)       # a line longer than the piece
            b = np.frombuffer(mm, dtype=np.uint8, count=hi - lo, offset=lo)
            if mm.find(b"\r", lo, hi) < 0:
                nl = np.flatnonzero(b == 10)
                starts = np.concatenate([[0], nl + 1])
                ends = np.concatenate([nl, [len(b)]])
                numbers = np.arange(line, line + len(starts), dtype=np.int64)
                breaks = len(nl)
            else:                             # '\r' breaks too: the reader's own line splitter
                from toaster.runtime.arrow_csv import Lines
                from toaster.runtime.chunked import count_breaks
                lines = Lines(bytes(b), line)
                starts, ends = lines._starts, lines._ends
                numbers = lines._numbers.astype(np.int64)
                breaks = count_breaks(bytes(b))
            keep = ends > starts
            starts, ends, numbers = starts[keep], ends[keep], numbers[keep]
            first = _first_fields(b, starts, ends, delim) if delim is not None else None
            del b                              # no view of the map outlives it
            yield starts.astype(np.int64) + lo, numbers, first
            lo, line = hi, line + breaks


def _first_fields(b: np.ndarray, starts: np.ndarray, ends: np.ndarray, delim: bytes):
    """(values, ok) of each row's first field: its digits read one position at a time for all
    rows (at most 18 passes), ok False where the field is not 1-18 plain digits."""
    n = len(starts)
    d = np.flatnonzero(b == delim[0])
    stop = ends
    if len(d):           # the first delimiter at or after each row's start, if on its line
        at = np.searchsorted(d, starts)
        stop = np.minimum(np.where(at < len(d), d[np.minimum(at, len(d) - 1)], ends), ends)
    length = stop - starts
    ok = (length >= 1) & (length <= 18)
    values = np.zeros(n, np.int64)
    last = len(b) - 1
    for k in range(int(length[ok].max()) if ok.any() else 0):
        on = ok & (k < length)
        digit = b[np.minimum(starts + k, last)].astype(np.int64) - 48
        ok &= ~on | ((digit >= 0) & (digit <= 9))
        values = np.where(on, values * 10 + digit, values)
    return values, ok


def _seq_keys(path: str, delim: str):
    """(starts, line numbers, sequence numbers) of every row of a sequence-ordered file; a row
    whose number is bad gets the smallest key (it takes no place of its own in the merge: the
    task that parses its step reports it, as the driver's reader would)."""
    from toaster.runtime.csv_source import parse_field
    from toaster.types import INT
    parts = list(_scan(path, delim.encode()))
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.concatenate([p[0] for p in parts])
    numbers = np.concatenate([p[1] for p in parts])
    keys = np.concatenate([p[2][0] for p in parts])
    ok = np.concatenate([p[2][1] for p in parts])
    odd = np.flatnonzero(~ok)
    if len(odd):            # signs, blanks, 19 digits, junk: rare, by the line parser's rule
        with open(path, "rb") as fh:
            for i in odd.tolist():
                fh.seek(int(starts[i]))
                field = fh.readline().split(delim.encode(), 1)[0].rstrip(b"\r\n")
                try:
                    keys[i] = parse_field(INT, field.decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    keys[i] = np.iinfo(np.int64).min
    return starts, numbers, keys


# ------------------------------------------------------------------ pieces of a batch
def _pieces(path: str, size: int, starts, numbers, lo: int, hi: int, total: int, parts: int) -> tuple:
    """Rows [lo, hi) of a file as up to `parts` byte ranges of at least MIN_PIECE_ROWS rows;
    starts/numbers: arrays indexed by row (total rows in the file)."""
    n = hi - lo
    k = max(1, min(parts, n // MIN_PIECE_ROWS))
    cuts = [lo + (n * j) // k for j in range(k)] + [hi]
    out = []
    for a, z in zip(cuts, cuts[1:]):
        end = int(starts[z]) if z < total else size
        out.append((path, int(starts[a]), end, int(numbers[a])))
    return tuple(out)


def _independent(decl, path: str, size: int | None, parts: int):
    """ByteRanges per batch of `size` rows (None: the whole file) of one independent stream,
    produced as the scan goes (O(cuts) memory: only the rows where a piece starts are kept)."""
    fsize = os.path.getsize(path)
    step = None if size is None else max(1, -(-size // parts))
    cut_rows, cut_at, cut_line = [], [], []
    total = 0
    for starts, numbers, _ in _scan(path):
        if step is None:        # whole file: pieces from the first piece's average row length
            avg = max(1.0, (int(starts[-1]) - int(starts[0]) + 1) / len(starts)) if len(starts) else 1.0
            step = max(MIN_PIECE_ROWS, int(fsize / avg / parts) + 1)
        rows = np.arange(total, total + len(starts))
        within = rows if size is None else rows % size
        pick = np.flatnonzero((within % max(step, MIN_PIECE_ROWS) == 0) | (within == 0))
        cut_rows += rows[pick].tolist()
        cut_at += starts[pick].tolist()
        cut_line += numbers[pick].tolist()
        total += len(starts)
        while size is not None and _full(cut_rows, size, total):
            yield _take_batch(decl, path, fsize, cut_rows, cut_at, cut_line, size, total)
    while cut_rows:
        yield _take_batch(decl, path, fsize, cut_rows, cut_at, cut_line, size, total)


def _full(cut_rows: list, size: int, total: int) -> bool:
    """Whether the batch starting at cut_rows[0] is complete (the next batch's first row seen)."""
    return bool(cut_rows) and total > cut_rows[0] + size


def _take_batch(decl, path, fsize, cut_rows, cut_at, cut_line, size, total) -> ByteRanges:
    first = cut_rows[0]
    last = total if size is None else min(first + size, total)
    k = next((i for i, r in enumerate(cut_rows) if r >= last), len(cut_rows))
    bounds = cut_at[:k] + ([cut_at[k]] if k < len(cut_rows) else [fsize])
    pieces = tuple((path, int(a), int(z), int(ln)) for a, z, ln in zip(bounds, bounds[1:], cut_line[:k]))
    del cut_rows[:k], cut_at[:k], cut_line[:k]
    return ByteRanges(decl.name, last - first, pieces)


def _sequenced(reads: list, size: int | None, parts: int):
    """The windows of the sequence-ordered streams `reads` [(decl, path, delim)] as steps:
    stream_order's merge of their keys, each window a ByteRanges per relation it touches in
    order of first appearance (as cut_windows orders its Batches)."""
    from toaster.runtime.stream_order import merge_by_seq
    scans = [_seq_keys(path, delim) for _, path, delim in reads]
    src, _ = merge_by_seq([keys for _, _, keys in scans])
    n = len(src)
    if n == 0:
        return
    width = n if size is None else size
    where = [np.flatnonzero(src == i) for i in range(len(reads))]    # each stream's events, in feed order
    sizes = [os.path.getsize(path) for _, path, _ in reads]
    for w0 in range(0, n, width):
        w1 = min(w0 + width, n)
        step = []
        for i, pos in enumerate(where):
            lo, hi = (int(v) for v in np.searchsorted(pos, [w0, w1]))
            if hi > lo:
                starts, numbers, _ = scans[i]
                step.append((int(pos[lo]), ByteRanges(reads[i][0].name, hi - lo,
                                                      _pieces(reads[i][1], sizes[i], starts, numbers, lo, hi,
                                                              len(starts), parts))))
        yield [r for _, r in sorted(step, key=lambda s: s[0])]


def range_steps(decls, batch_size: int | None, base_dir: str | None = None, *, relations_used=None,
                parts: int = 2):
    """The steps of the streams among `decls` (lists of ByteRanges), in the order and with the
    rows that open_sources(..., steps=True) gives their Batches with driver input; lazily (the
    sequence-ordered streams are scanned whole at their first step). Settings and missing files
    raise here, before any step."""
    from toaster.runtime.arrow_csv import arrow_supports
    from toaster.runtime.csv_source import _check_readable, _round_robin, csv_settings, resolve_path
    if batch_size is not None and batch_size <= 0:
        raise ValueError("batch_size must be positive")
    used = None if relations_used is None else {r.upper() for r in relations_used}
    groups: dict = {}            # file -> relations; the sequence-ordered ones under one key
    sequenced: list = []
    for d in decls:
        if d.kind == "table" or d.source is None or (used is not None and d.name not in used):
            continue
        if d.source.adaptor != "csv":
            raise UnsupportedError(f"--spark-input executors: the {d.source.adaptor} adaptor of {d.name}")
        _check_readable(d, base_dir)
        delim, deletions = csv_settings(d)
        path = os.path.abspath(resolve_path(d.source.path, base_dir))
        if deletions:
            if not arrow_supports(delim):
                raise UnsupportedError(f"--spark-input executors: sequence-ordered stream {d.name} with the "
                                       f"delimiter {delim!r} (one ASCII character needed)")
            groups.setdefault(_SEQUENCED, [])
            sequenced.append((d, path, delim))
        else:
            groups.setdefault(path, []).append(d)

    def steps():
        for key, group in groups.items():
            if key is _SEQUENCED:
                yield from _sequenced(sequenced, batch_size, parts)
            else:
                yield from ([b] for b in _round_robin([_independent(d, key, batch_size, parts) for d in group]))
    return steps()


_SEQUENCED = object()


# ------------------------------------------------------------------ reading (tasks and driver)
def read_piece(decl, piece, needed=None):
    """The Batch (physical columns, `needed` of them converted: per-column flags or None for
    all) of one piece (path, start, end, first line), parsed by the CLI's reader; a bad row
    raises the InputError the driver's reader gives for it (its line numbered in the file)."""
    from toaster.runtime.arrow_csv import _layout_from_first_line, _read_chunk, _split_lines, arrow_supports
    from toaster.runtime.batch import Batch
    from toaster.runtime.csv_source import csv_settings, parse_csv_lines
    from toaster.runtime.nulls import logical_decl, logical_needed, physical_batch
    path, start, end, first_line = piece
    logical = logical_decl(decl) if decl.has_nulls else decl
    wanted = logical_needed(decl, needed) if decl.has_nulls else needed
    delim, deletions = csv_settings(logical)
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
    except OSError as e:
        raise InputError(f"cannot read source of {decl.name}: {e.strerror}", file=path) from None
    good = None
    if not arrow_supports(delim):          # the line parser, as iter_source uses it
        good = next(iter(parse_csv_lines(logical, _split_lines(data.decode("utf-8", errors="strict")),
                                         path=path, first_line=first_line)), None)
    else:
        how = _layout_from_first_line(logical, data, delim, deletions, wanted)
        if how is not None:
            good, error, _ = _read_chunk(logical, how, data, first_line, delim, path)
            if error is not None:
                raise error
    if good is None:
        return Batch(decl.name, np.zeros(0, np.int8), tuple(None for _ in decl.columns))
    return physical_batch(decl, good)


def read_ranges(decl, ranges: ByteRanges, needed=None):
    """A ByteRanges batch read on the driver (a relation the executors do not read), or None."""
    from toaster.runtime.batch import Batch
    parts = [b for b in (read_piece(decl, p, needed) for p in ranges.pieces) if len(b)]
    return None if not parts else parts[0] if len(parts) == 1 else Batch.concat(parts)
