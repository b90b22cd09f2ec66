"""Functions that run inside Spark's Python workers.

The driver registers this module with cloudpickle as pickled *by value*, so the map plumbing
needs no toaster install on workers; the scalar semantics (division, casts, functions) are
toaster.functions', imported by reference. Partition state: every distributed map is an RDD with exactly one
dict {key tuple: value} per partition (so co-partitioned maps can be zipped); an entry lives
in partition `partition_of(key values at the map's partition positions) % P`.
"""
from __future__ import annotations

import zlib

# scalar semantics (IEEE division, casts, the registered functions) are toaster's one
# definition; the generated code imports them from here, so workers import toaster for them
from toaster.functions import call as scalar_call, cast as scalar_cast, divide as ieee_div  # noqa: F401


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
