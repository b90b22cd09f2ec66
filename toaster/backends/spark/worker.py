"""Functions that run inside Spark's Python workers.

The driver registers this module with cloudpickle as pickled *by value*, so the map plumbing
needs no toaster install on workers; the scalar semantics (division, casts, functions) are
toaster.functions', imported by reference. Partition state: every distributed map is an RDD with exactly one
dict {key tuple: value} per partition (so co-partitioned maps can be zipped); an entry lives
in partition `partition_of(key values at the map's partition positions) % P`.
"""
from __future__ import annotations

# scalar semantics (IEEE division, casts, the registered functions) are toaster's one
# definition; the generated code imports them from here, so workers import toaster for them
from toaster.functions import call as scalar_call, cast as scalar_cast, divide as ieee_div  # noqa: F401
from toaster.backends.spark.native_hash import key_hash


OVERFLOW_MARK = "toaster-int64-overflow"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def int64_overflow(map_name: str):
    """Raised by generated code when an integer written to a map leaves the 64-bit range; the
    driver turns it into IntegerOverflowError (the mark survives Spark's error wrapping)."""
    raise OverflowError(f"{OVERFLOW_MARK}[{map_name}]")


def key_partition(key: tuple, positions: tuple) -> int:
    """The hash of a key's components at `positions` (% P: its partition); the one partition
    function of the engine, native_hash.py (its numpy form places columns the same way)."""
    return key_hash(tuple(key[i] for i in positions))


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


_ABSENT = object()


def singleton_tuple(d):
    return (d,)



class IndexedMap(dict):
    """A view's entries plus the secondary indexes its slices read, maintained on every write.

    An index over key positions `pos` maps the values at those positions to the keys that have
    them ({subkey: {key: None}}); it is built on first use and then kept up to date, so a slice
    costs what it returns, never a scan. `touched` (when not None) collects the keys written
    since it was set: the delta a task logs for its stage. `undo` (when not None) keeps the
    value each key had before its first write since it was set (the driver's rollback).
    """

    def __init__(self, *args):
        super().__init__(*args)
        self.indexes = {}
        self.touched = None
        self.cleared = False
        self.undo = None

    def _remember(self, key):
        if key not in self.undo:
            self.undo[key] = dict.get(self, key, _ABSENT)

    def rollback(self) -> None:
        """Give back every key's value as of when `undo` was set, and stop remembering."""
        undo, self.undo = self.undo, None
        for key, old in (undo or {}).items():
            if old is _ABSENT:
                self.pop(key)
            else:
                self[key] = old

    def __setitem__(self, key, value):
        if self.undo is not None:
            self._remember(key)
        if self.indexes and key not in self:
            for pos, ix in self.indexes.items():
                sub = tuple([key[i] for i in pos])
                bucket = ix.get(sub)
                if bucket is None:
                    ix[sub] = {key: None}
                else:
                    bucket[key] = None
        dict.__setitem__(self, key, value)
        if self.touched is not None:
            self.touched.add(key)

    def pop(self, key, default=None):
        if key not in self:
            return default
        if self.undo is not None:
            self._remember(key)
        for pos, ix in self.indexes.items():
            sub = tuple([key[i] for i in pos])
            bucket = ix[sub]
            del bucket[key]
            if not bucket:
                del ix[sub]
        if self.touched is not None:
            self.touched.add(key)
        return dict.pop(self, key)

    def clear(self):
        if self.undo is not None:
            for key in self:
                self._remember(key)
        dict.clear(self)
        for ix in self.indexes.values():
            ix.clear()
        if self.touched is not None:
            self.touched.clear()
            self.cleared = True

    def index(self, pos: tuple) -> dict:
        ix = self.indexes.get(pos)
        if ix is None:
            ix = {}
            for key in self:
                ix.setdefault(tuple([key[i] for i in pos]), {})[key] = None
            self.indexes[pos] = ix
        return ix


def index_of(m: dict, pos: tuple) -> dict:
    """{values at pos: {key: None}} of a map: maintained for an IndexedMap, else built by one
    scan (temps and batch deltas: the scan is O(batch))."""
    if isinstance(m, IndexedMap):
        return m.index(pos)
    ix = {}
    for key in m:
        ix.setdefault(tuple([key[i] for i in pos]), {})[key] = None
    return ix
