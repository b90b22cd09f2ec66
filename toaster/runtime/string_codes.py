"""One-character string columns (flags such as TPC-H's returnflag, line status, order status)
read straight from the Arrow string array's bytes: the caller maps the bytes through a
256-entry table instead of running Arrow's hash kernel (ten times cheaper on such columns).
Other columns: None (the caller uses Arrow's dictionary_encode).

Every numpy call costs ~1 us whatever the length of a 1,000-row batch, so the test that every
value is one byte is a byte comparison of the offsets with a cached arange (1 us; np.diff and
np.all took 14 us)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_ARANGE = np.arange(4097, dtype=np.int32)      # grown on demand


def _arange(n: int) -> np.ndarray:
    global _ARANGE
    if n > len(_ARANGE):
        _ARANGE = np.arange(max(n, 2 * len(_ARANGE)), dtype=np.int32)
    return _ARANGE[:n]


def one_byte_codes(col, check_ascii: bool = True) -> np.ndarray | None:
    """The bytes of col (a string Array) as a uint8 array (a view, no copy) when every value is
    exactly one character byte and there are no nulls; else None. check_ascii=False leaves out
    the test that every byte is ASCII (< 128): the caller then must refuse bytes >= 128 itself
    (they are parts of a multi-byte character only if some value is longer than one byte, which
    this function refuses, but a lone byte >= 128 is not valid UTF-8 text of one character)."""
    if col.__class__ is not pa.StringArray or col.null_count:
        return None
    n = len(col)
    if n == 0:
        return None
    buffers = col.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32, count=n + 1, offset=4 * col.offset)
    first = int(offsets[0])
    if int(offsets[n]) - first != n:
        return None
    # lengths all 1 <=> offsets == first + 0, 1, ..., n (compared as bytes: no bool array)
    if (_arange(n + 1) + np.int32(first)).tobytes() != offsets.tobytes():
        return None
    text = np.frombuffer(buffers[2], dtype=np.uint8, count=n, offset=first)
    if check_ascii and text.max() >= 128:    # not a whole UTF-8 character: leave it to Arrow
        return None
    return text
