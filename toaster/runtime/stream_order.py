"""The order in which the events of several streams are fed: by their sequence numbers.

CSV streams with deletions carry a sequence number on every line (`seq|op|...`). As DBToaster's
multiplexer does, the events of all such streams are fed in the order of those numbers (ties:
the relation declared first; a line whose number is smaller than an earlier line of its own
file keeps its place in the file: its key is the largest number seen so far in that file).

Batches: a Batch carries one relation, so a batch of N events is the next N events in that
order, cut into one Batch per relation (in order of first appearance in the window, each
relation's events in stream order). Reordering events of different relations inside one
window does not change the database after it, which is all a batch-mode view promises; with
batch size 1 the events come exactly in sequence order.

    order = merge_by_seq([b.seq for b in whole_streams])
    groups = cut_windows(whole_streams, *order, size=1000)      # [[Batch per relation]]
    groups = merge_windows(streams_in_pieces, size=1000)        # the same, lazily
"""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np

from toaster.runtime.batch import Batch


def merge_by_seq(seqs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(stream index, row index) of every event, in feed order."""
    if not seqs:
        return np.empty(0, np.int32), np.empty(0, np.int64)
    keys = np.concatenate([np.maximum.accumulate(np.asarray(s, dtype=np.int64)) if len(s) else
                           np.empty(0, np.int64) for s in seqs])
    src = np.concatenate([np.full(len(s), i, dtype=np.int32) for i, s in enumerate(seqs)])
    row = np.concatenate([np.arange(len(s), dtype=np.int64) for s in seqs])
    order = np.argsort(keys, kind="stable")       # stable: ties keep declaration, then file order
    return src[order], row[order]


def cut_windows(streams: Sequence[Batch], src: np.ndarray, row: np.ndarray,
                size: int | None) -> list[list[Batch]]:
    """The events (src[k], row[k]) in windows of `size` (None: one window), each window one Batch
    per stream it touches, in order of first appearance; each stream's rows keep their order."""
    if size is not None and size < 1:
        raise ValueError("batch size must be >= 1")
    n = len(src)
    if n == 0:
        return []
    if size == 1:
        return [[streams[r].slice(i, i + 1)] for r, i in zip(src.tolist(), row.tolist())]
    step = n if size is None else size
    out: list[list[Batch]] = []
    for start in range(0, n, step):
        r_chunk, i_chunk = src[start:start + step], row[start:start + step]
        uniq, first = np.unique(r_chunk, return_index=True)
        group = []
        for r in uniq[np.argsort(first)].tolist():
            idx = i_chunk[r_chunk == r]
            lo, hi = int(idx[0]), int(idx[-1]) + 1
            contiguous = hi - lo == len(idx) and bool(np.all(np.diff(idx) == 1))
            group.append(streams[r].slice(lo, hi) if contiguous else streams[r].take(idx))
        out.append(group)
    return out


def merge_windows(streams: Sequence[Iterable[Batch]], size: int) -> Iterator[list[Batch]]:
    """The windows cut_windows(whole streams, *merge_by_seq(their seqs), size) gives, from
    streams that arrive in pieces (Batches with seq, each stream's in file order): a k-way merge
    that holds about one piece per stream plus one window, never a whole stream.

    Every step emits the events that surely come next: with h the smallest running-max key read
    so far among the streams not yet exhausted (no later event of any of them has a smaller key),
    the buffered events with key < h, and those with key == h of streams that no live stream
    declared before them ties at h. Then the first live stream at h reads its next piece."""
    if size < 1:
        raise ValueError("batch size must be >= 1")
    iters = [iter(s) for s in streams]
    k = len(iters)
    buf: list[Batch | None] = [None] * k          # read, not yet merged
    keys = [np.empty(0, np.int64) for _ in range(k)]
    top = [np.iinfo(np.int64).min] * k             # running max of each stream's seq so far
    live = [True] * k
    window = _OpenWindow(k, size)
    while True:
        h = min((top[i] for i in range(k) if live[i]), default=None)
        counts = []
        tied_before = False                         # a live stream declared earlier is at h
        for i in range(k):
            if buf[i] is None:
                counts.append(0)
            elif h is None:
                counts.append(len(buf[i]))
            else:
                counts.append(int(np.searchsorted(keys[i], h, side="right" if not tied_before else "left")))
            tied_before = tied_before or (live[i] and top[i] == h)
        if any(counts):
            yield from window.add(buf, keys, counts)
            for i, n in enumerate(counts):
                if n:
                    rest = len(buf[i]) - n
                    buf[i] = buf[i].slice(n, len(buf[i])) if rest else None
                    keys[i] = keys[i][n:]
        if h is None:
            yield from window.finish()
            return
        i = next(i for i in range(k) if live[i] and top[i] == h)
        piece = next(iters[i], None)
        if piece is None:
            live[i] = False
        elif len(piece):
            if piece.seq is None:
                raise ValueError(f"{piece.relation}: a batch without sequence numbers")
            key = np.maximum.accumulate(np.asarray(piece.seq, dtype=np.int64))
            np.maximum(key, top[i], out=key)
            top[i] = int(key[-1])
            buf[i] = piece if buf[i] is None else Batch.concat([buf[i], piece])
            keys[i] = np.concatenate([keys[i], key])


class _OpenWindow:
    """Events merged so far that do not fill a window yet, per stream as the rows of a Batch."""

    def __init__(self, k: int, size: int):
        self.size = size
        self.rows: list[Batch | None] = [None] * k
        self.src = np.empty(0, np.int32)            # stream of each open event, in feed order
        self.row = np.empty(0, np.int64)            # its row in self.rows[stream]

    def add(self, buf, keys, counts) -> Iterator[list[Batch]]:
        """Merge the first counts[i] buffered events of each stream (sorted by key; ties: the
        stream declared first, then file order) after the open ones; yield the full windows."""
        parts = [i for i, n in enumerate(counts) if n]
        key = np.concatenate([keys[i][:counts[i]] for i in parts])
        src = np.concatenate([np.full(counts[i], i, np.int32) for i in parts])
        row = np.concatenate([np.arange(counts[i], dtype=np.int64) for i in parts])
        order = np.argsort(key, kind="stable")
        src, row = src[order], row[order]
        offset = np.zeros(len(self.rows), np.int64)
        for i in parts:
            head = buf[i].slice(0, counts[i])
            if self.rows[i] is not None:
                offset[i] = len(self.rows[i])
                head = Batch.concat([self.rows[i], head])
            self.rows[i] = head
        src = np.concatenate([self.src, src])
        row = np.concatenate([self.row, row + offset[src[len(self.src):]]])
        full = len(src) // self.size * self.size
        if full:
            yield from cut_windows(self.rows, src[:full], row[:full], self.size)
        src, row = src[full:], row[full:]
        # the open window's rows of each stream are the tail of its rows: keep only those
        start = np.full(len(self.rows), -1, np.int64)
        for i in np.unique(src).tolist():
            start[i] = row[src == i].min()
        for i, b in enumerate(self.rows):
            if b is not None:
                self.rows[i] = b.slice(int(start[i]), len(b)) if start[i] >= 0 else None
        self.src, self.row = src, row - np.maximum(start, 0)[src]

    def finish(self) -> Iterator[list[Batch]]:
        if len(self.src):
            yield from cut_windows(self.rows, self.src, self.row, None)
