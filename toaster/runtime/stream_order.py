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
"""
from __future__ import annotations

from typing import Sequence

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
