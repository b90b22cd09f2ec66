"""One-character string columns (flags such as TPC-H's returnflag, line status, order status)
read straight from the Arrow string array's bytes: the caller maps the bytes through a
256-entry table instead of running Arrow's hash kernel (ten times cheaper on such columns).
Other columns: None (the caller uses Arrow's dictionary_encode)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def one_byte_codes(col) -> np.ndarray | None:
    """The bytes of col (a string Array) as a uint8 array (a view, no copy) when every value is
    exactly one ASCII character and there are no nulls; else None."""
    if not isinstance(col, pa.StringArray) or col.null_count or len(col) == 0:
        return None
    n = len(col)
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * col.offset)
    if offsets[-1] - offsets[0] != n or not bool(np.all(np.diff(offsets) == 1)):
        return None
    text = np.frombuffer(col.buffers()[2], dtype=np.uint8, count=n, offset=int(offsets[0]))
    if text.max() >= 128:              # not a whole UTF-8 character: leave it to Arrow
        return None
    return text
