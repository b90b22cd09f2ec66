"""Where a key lives: THE partition function of the Spark engine (numpy; scalar twin for one key).

Every place that places an entry -- the driver's Scatter, a stage's Repart, restore, the Python
and the native block paths -- calls `partitions_of` (columns) or `key_hash` (one key), which
agree: a key's hash mixes one 64-bit word per component,
    bool / int / date      the integer (two's complement)
    float                  the integer when it is integral and in range (so 1.0 and 1, equal
                           keys in Python, land together; -0.0 is 0), else its IEEE bits
    string                 crc32 of its UTF-8 bytes (the same in every process, unlike hash())
with h = SEED; h = (h ^ w) * MULT; h ^= h >> 32 (mod 2^64), and the partition is h % P.
Strings are hashed once per distinct value of a column (Arrow dictionary-encodes it).
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

SEED = 0x243F6A8885A308D3
MULT = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
_TWO63 = float(2 ** 63)


def _word(v) -> int:
    if isinstance(v, str):
        return zlib.crc32(v.encode("utf-8"))
    if isinstance(v, float):
        if v == v and abs(v) < _TWO63 and v == int(v):
            return int(v) & MASK
        return struct.unpack("<Q", struct.pack("<d", v))[0]
    return int(v) & MASK


def key_hash(values) -> int:
    """The hash of one key (a sequence of component values)."""
    h = SEED
    for v in values:
        h = ((h ^ _word(v)) * MULT) & MASK
        h ^= h >> 32
    return h


def _string_words(col) -> np.ndarray:
    import pyarrow as pa
    arr = col if isinstance(col, pa.Array) else pa.array(col, type=pa.string())
    enc = arr.dictionary_encode()
    distinct = np.fromiter((zlib.crc32(s.encode("utf-8")) for s in enc.dictionary.to_pylist()),
                           np.uint64, len(enc.dictionary))
    codes = enc.indices.to_numpy(zero_copy_only=False)
    return distinct[codes] if len(distinct) else np.zeros(len(codes), np.uint64)


def column_words(col) -> np.ndarray:
    """One uint64 word per value of a key column (numpy array, or a list)."""
    a = col if isinstance(col, np.ndarray) else np.asarray(col)
    if a.dtype == object or a.dtype.kind in "US":
        if len(a) and not isinstance(a[0], str):
            return column_words(np.asarray(a.tolist()))
        return _string_words(a.tolist() if a.dtype.kind in "US" else a)
    if a.dtype.kind == "f":
        a = a.astype(np.float64, copy=False)
        integral = np.isfinite(a) & (np.abs(a) < _TWO63)
        with np.errstate(invalid="ignore"):
            integral &= a == np.trunc(a)
        out = a.view(np.uint64).copy()
        out[integral] = a[integral].astype(np.int64).view(np.uint64)
        return out
    return a.astype(np.int64, copy=False).view(np.uint64)


def hashes_of(columns, n: int) -> np.ndarray:
    h = np.full(n, SEED, np.uint64)
    mult, shift = np.uint64(MULT), np.uint64(32)
    for col in columns:
        h = (h ^ column_words(col)) * mult
        h ^= h >> shift
    return h


def partitions_of(columns, n: int, partitions: int) -> np.ndarray:
    """The partition (int64 array) of each of n keys given by their key columns at the
    partition positions (no columns: one partition for every key, key_hash(()) % P)."""
    return (hashes_of(columns, n) % np.uint64(partitions)).astype(np.int64)
