"""Events of several relations in stream order, as one input (an order book's BIDS and ASKS).

Fed as runs of consecutive same-relation events, a stream whose relations alternate every few
events costs one batch per run (Python fills a record per batch, native code sets each one up):
~0.65 us per run against ~0.03 us per event of trigger work. An `Interleaved` carries the
stream as one Batch per relation plus one tag per event, so the llvm feed walks the tags natively
and no Python runs per event or per run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toaster.errors import InputError
from toaster.runtime.batch import Batch


@dataclass(frozen=True, eq=False)
class Interleaved:
    """Event i is the next unused row of `parts[tags[i]]` (rows taken in order): applying it equals
    applying its runs (`runs()`) with `apply_many`. The llvm native feed runs it as one batch
    (a failure rejects the whole of it when the program logs undo records); other paths apply the
    runs one after another, each atomic, as apply_many does."""
    parts: tuple            # of Batch, one per tag value
    tags: np.ndarray        # int8, one per event

    def __post_init__(self):
        tags = np.ascontiguousarray(self.tags, dtype=np.int8)
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "tags", tags)
        if not all(isinstance(p, Batch) for p in self.parts):
            raise InputError("Interleaved: every part must be a Batch")
        self.validate()

    def validate(self) -> None:
        """Raise InputError unless the tags name parts and count each part's rows (again before
        the runs are cut: numpy arrays can change after construction; the native feed checks too)."""
        tags = self.tags
        if len(tags) and (int(tags.min()) < 0 or int(tags.max()) >= len(self.parts)):
            raise InputError(f"Interleaved: tags must lie in 0..{len(self.parts) - 1}")
        counts = np.bincount(tags.astype(np.int64), minlength=len(self.parts))
        if counts.tolist() != [len(p) for p in self.parts]:
            raise InputError("Interleaved: part t must have as many rows as there are tags equal to t")

    def __len__(self) -> int:
        return len(self.tags)

    def runs(self) -> list:
        """The runs of consecutive same-part events, in order, each a slice of its part."""
        self.validate()
        tags = self.tags
        if len(tags) == 0:
            return []
        cuts = np.flatnonzero(np.diff(tags)) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        ends = np.concatenate((cuts, [len(tags)])).tolist()
        cursor = [0] * len(self.parts)
        out = []
        for s, e in zip(starts, ends):
            t = int(tags[s])
            out.append(self.parts[t].slice(cursor[t], cursor[t] + e - s))
            cursor[t] += e - s
        return out


def expand_interleaved(batches) -> list:
    """The batches with every Interleaved replaced by its runs."""
    out = []
    for b in batches:
        if isinstance(b, Interleaved):
            out.extend(b.runs())
        else:
            out.append(b)
    return out
