"""Reading a source file in bounded pieces: byte chunks cut at line breaks, and the rows read
from them cut again into batches of exactly `batch_size` rows, so a reader holds O(chunk +
batch) of a file at a time instead of the whole file.

    for data, first_line in byte_chunks(fh, 8 << 20):      # bytes, number of its first line
        ...
    out = Rebatcher(batch_size)
    for block in blocks: yield from out.add(block)          # full batches as soon as they fill
    yield from out.finish()                                 # the last, shorter one
"""
from __future__ import annotations

import io
import os
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from toaster.runtime.batch import Batch

BLOCK_SIZE = 8 << 20      # bytes of a file parsed at a time (Arrow parses one in parallel threads)


def byte_chunks(fh: BinaryIO, block_size: int = BLOCK_SIZE) -> Iterator[tuple[bytes, int]]:
    """(chunk, 1-based number of its first line) for the whole file. Every chunk but the last
    ends with a line break (\\n, \\r or \\r\\n, never split); a line longer than block_size makes
    its chunk longer. Line numbers count every line, empty ones included (as Python's reader).
    Each chunk is a copy of chunk_views' view (which see)."""
    line = 1
    scratch = None
    for view in chunk_views(fh, block_size):
        chunk = bytes(view)
        yield chunk, line
        if scratch is None or len(scratch) < len(chunk):
            scratch = np.empty(len(chunk), dtype=bool)
        line += count_breaks(chunk, scratch)


def chunk_views(fh: BinaryIO, block_size: int = BLOCK_SIZE) -> Iterator[memoryview]:
    """The whole file as views of about block_size bytes, cut as byte_chunks cuts them, into
    two read buffers used in turn (fresh buffers cost page faults comparable to Arrow's parse of
    a narrow projection). A view is valid until the one after next is asked for; whatever the
    consumer built on it (a pyarrow buffer, a numpy array) should be gone by then -- if it is
    not, its buffer is left to it and reading goes on in a new one. Two buffers, because
    Arrow's multi-threaded reader lets go of its input from its pool threads a moment after
    read_csv returns."""
    if block_size < 1:
        raise ValueError("block_size must be positive")
    buf = bytearray(min(block_size, _bytes_left(fh) + 1))     # zero-filled: no larger than the file
    have = 0                           # bytes at the front of buf not yet in a chunk
    lent = None                        # (views, buffer) of the last chunk given out
    while True:
        with memoryview(buf) as view:
            n = fh.readinto(view[have:])
        if not n:
            if have:
                yield memoryview(buf)[:have]
            return
        end = have + n
        cut = _after_last_break(buf, end)
        if cut == 0:                   # no complete line yet: read on, in a larger buffer if full
            have = end
            if end == len(buf):
                buf.extend(bytes(len(buf)))
            continue
        whole = memoryview(buf)
        chunk = whole[:cut]
        yield chunk
        spare = _reclaim(lent)         # the chunk before this one's buffer, if no longer exported
        lent = ((chunk, whole), buf)
        if spare is None or len(spare) < len(buf):
            spare = bytearray(len(buf))
        spare[:end - cut] = buf[cut:end]     # the partial last line moves to the other buffer
        buf, have = spare, end - cut


def _reclaim(lent):
    """The buffer of a chunk given out earlier, its views released; None if the consumer still
    holds a view or something built on one."""
    if lent is None:
        return None
    views, buf = lent
    try:
        for v in views:
            v.release()
    except BufferError:
        return None
    return buf


def _bytes_left(fh) -> int:
    """Bytes from fh's position to the end of its file (a large number when that is unknown)."""
    try:
        return max(0, os.fstat(fh.fileno()).st_size - fh.tell())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 1 << 62


def _after_last_break(buf, end: int) -> int:
    """Index just after the last line break of buf[:end] that is surely complete (0 if none): a
    '\\r' as the very last byte may be the first half of '\\r\\n'."""
    return max(buf.rfind(b"\n", 0, end), buf.rfind(b"\r", 0, end - 1)) + 1


def count_breaks(data: bytes, scratch: np.ndarray | None = None) -> int:
    """Line breaks in data (bytes-like); scratch: a reused bool array of at least len(data)
    (no page faults)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    if b"\r" not in data:              # the usual file: one pass (memchr finds no '\r' fast)
        raw = np.frombuffer(data, dtype=np.uint8)
        lf = np.equal(raw, 10, out=None if scratch is None else scratch[:len(raw)])
        return int(np.count_nonzero(lf))                  # 3x faster than bytes.count
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


class Rebatcher:
    """Blocks of rows of one relation (any sizes, in order) cut into batches of exactly `size`
    rows; size None: one batch of everything at finish(). Rows of a batch not yet full stay
    pending, so a reader that stops at a bad line drops its batch whole."""

    def __init__(self, size: int | None):
        if size is not None and size < 1:
            raise ValueError("batch_size must be positive")
        self.size = size
        self._pending: list[Batch] = []
        self._count = 0

    def add(self, block: Batch | None) -> Iterator[Batch]:
        if block is None or len(block) == 0:
            return
        self._pending.append(block)
        self._count += len(block)
        if self.size is None or self._count < self.size:
            return
        whole = concat_batches(self._pending)
        full = self._count // self.size * self.size
        for lo in range(0, full, self.size):
            yield whole.slice(lo, lo + self.size)
        rest = whole.slice(full, self._count)
        self._pending = [rest] if len(rest) else []
        self._count = len(rest)

    def finish(self) -> Iterator[Batch]:
        if self._count:
            yield concat_batches(self._pending)
        self._pending, self._count = [], 0


def concat_batches(batches: list[Batch]) -> Batch:
    """One batch of the rows of several (of one relation), in order; Arrow columns are chained
    (no copy), numpy ones concatenated."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0]
    cols = tuple(_concat_column([b.columns[j] for b in batches]) for j in range(len(first.columns)))
    seq = None if any(b.seq is None for b in batches) else np.concatenate([b.seq for b in batches])
    return Batch(first.relation, np.concatenate([b.signs for b in batches]), cols, seq,
                 all(b.checked for b in batches))


def _concat_column(cols):
    if any(c is None for c in cols):
        return None
    if any(isinstance(c, (pa.Array, pa.ChunkedArray)) for c in cols):
        chunks = []
        for c in cols:
            if isinstance(c, pa.ChunkedArray):
                chunks.extend(c.chunks)
            else:
                chunks.append(c if isinstance(c, pa.Array) else pa.array(c))
        return pa.chunked_array(chunks, type=chunks[0].type) if chunks else cols[0]
    return np.concatenate(cols)
