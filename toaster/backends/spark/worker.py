"""Functions that run inside Spark's Python workers (standard library only).

The driver registers this module with cloudpickle as pickled *by value*, so workers need not
have toaster installed. Partition state: every distributed map is an RDD with exactly one
dict {key tuple: value} per partition (so co-partitioned maps can be zipped); an entry lives
in partition `partition_of(key values at the map's partition positions) % P`.
"""
from __future__ import annotations

import zlib


def stable_hash(values: tuple) -> int:
    """A hash that is the same in every process (str hashing is salted per process)."""
    h = 0x345678
    for v in values:
        if isinstance(v, str):
            x = zlib.crc32(v.encode("utf-8"))
        else:
            x = hash(v)            # ints, floats and bools hash deterministically
        h = ((h * 1000003) ^ x) & 0x7FFFFFFFFFFFFFFF
    return h


def key_partition(key: tuple, positions: tuple) -> int:
    return stable_hash(tuple(key[i] for i in positions))


def merge_entries(items) -> dict:
    """Sum (key, value) pairs into one dict, dropping zero sums."""
    out = {}
    for k, v in items:
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v != 0}


def one_dict(items):
    """mapPartitions body: exactly one merged dict per partition."""
    yield merge_entries(items)


def dict_items(d: dict):
    return d.items()


def split_by_partition(d: dict, positions: tuple, partitions: int) -> list:
    out = [{} for _ in range(partitions)]
    for k, v in d.items():
        if v != 0:
            out[key_partition(k, positions) % partitions][k] = v
    return out


def append_to_tuple(pair):
    return pair[0] + (pair[1],)


def singleton_tuple(d):
    return (d,)


def ieee_div(a, b) -> float:
    """Division as in IEEE arithmetic (DIALECT.md §9): x/0 is ±inf, 0/0 is nan, never a crash."""
    a, b = float(a), float(b)
    if b == 0.0:
        if a == 0.0 or a != a:
            return float("nan")
        return float("inf") if (a > 0) == (str(b)[0] != "-") else float("-inf")
    return a / b
