"""Strings in the LLVM backend: the engine's string dictionary and the native *property tables*.

Native code sees a STRING as an i64 id into the engine's dictionary (`StringPool`). A string
function call whose other arguments are literals, e.g. `like(x, 'forest%')` or
`substring(x, 0, 2)`, is compiled to a load `table[id]` from a table that the engine fills for
every id it ever creates (`StringTable` is the codegen's description of one table). String
order (<, <=, >, >=) compares `rank[id]`, the position of the string among all known strings.

Values computed here are the calculus evaluator's (toaster/calculus/functions.py), per new
*distinct* string, never per tuple. Where they can, they run as C-level `map()`s over the new
strings (compiled regexes, str methods, slicing), with no Python bytecode per string: this
measured 2-7x faster than numpy's StringDType functions including the conversion, which also
mishandle strings with NUL characters in numpy 2.4 (endswith, sort, searchsorted). numpy holds
the tables and does the rank arithmetic.

A function that can fail on some strings (cast_date('abc')) is not *total*: its table has a
validity byte per id, and native code that reads an invalid entry records the id in
`<table>.error`; the engine rolls the batch back and raises InputError (engine.py).

Ids are reused: `collect` (run by the engine when the dictionary has doubled since the last
collection) keeps the literals, every id a nonzero map entry holds in a key, and whatever a
STRING-valued table gives for a kept id (transitively); it frees the rest, shrinks the tables
when the highest live id allows, and hands the freed ids out again, smallest first. A zero-valued
map entry keeping a freed id is harmless: it means "absent" under whatever string reuses the id.
"""
from __future__ import annotations

import ctypes
import operator
import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import pyarrow as pa

from toaster.calculus.functions import BUILTINS
from toaster.errors import InputError
from toaster.runtime.checks import canonical_string_column
from toaster.runtime.string_codes import one_byte_codes
from toaster.types import Type, FLOAT, STRING

RANK = "rank"
RANK_SYMBOL = "strtab.rank"
# functions that give a value for every string once their literal arguments are valid
_TOTAL = ("like", "regexp_match", "substring", "cast_string", "hash")


@dataclass(frozen=True)
class StringTable:
    """One native table: `symbol` is a global `ptr` to its values, indexed by string id."""
    symbol: str
    function: str          # a BUILTINS name, or RANK
    args: tuple            # the call's literal arguments; None at `position` (the string)
    position: int
    type: Type             # result type: FLOAT -> double[], else i64[] (STRING: ids)
    total: bool            # False: also `<symbol>.ok` (u8[]) and `<symbol>.error` (i64)

    def call_text(self, s: str = "<string>") -> str:
        args = [repr(s) if i == self.position else repr(a) for i, a in enumerate(self.args)]
        return f"{self.function}({', '.join(args)})"


def is_total(function: str, args: tuple, position: int) -> bool:
    if function not in _TOTAL:
        return False
    try:     # the literal arguments are valid if a call on some string works
        BUILTINS[function](*_with(args, position, ""))
        if function == "regexp_match":
            re.compile(args[0])
    except Exception:
        return False
    return True


def _with(args, position, s):
    return [s if i == position else a for i, a in enumerate(args)]


def _like_matcher(pattern: str):
    """strings -> iterable of bools, exactly functions.like(s, pattern)."""
    if "_" not in pattern:
        parts = pattern.split("%")
        if len(parts) == 1:
            return lambda strs: map(operator.eq, strs, repeat(pattern))
        if len(parts) == 2 and not parts[1]:
            return lambda strs: map(str.startswith, strs, repeat(parts[0]))
        if len(parts) == 2 and not parts[0]:
            return lambda strs: map(str.endswith, strs, repeat(parts[1]))
        if len(parts) == 3 and not parts[0] and not parts[2]:
            return lambda strs: map(operator.contains, strs, repeat(parts[1]))
    rx = re.compile("".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern),
                    flags=re.DOTALL)
    return lambda strs: map(bool, map(rx.fullmatch, strs))


def _fast_values(spec: StringTable, strs: list):
    """The function over every string as a C-level map, or None when only the Python loop fits."""
    args = spec.args
    if spec.function == "like" and spec.position == 0 and isinstance(args[1], str):
        return _like_matcher(args[1])(strs)
    if spec.function == "regexp_match" and spec.position == 1 and isinstance(args[0], str):
        return map(bool, map(re.compile(args[0]).search, strs))
    if spec.function == "substring" and spec.position == 0:
        start, length = int(args[1]), int(args[2])
        if length <= 0:
            return repeat("", len(strs))
        return map(operator.itemgetter(slice(start, start + length)), strs)
    if spec.function == "cast_string" and len(args) == 1:
        return iter(strs)
    if spec.function == "cast_float" and len(args) == 1:
        return map(float, strs)
    return None


def evaluate(spec: StringTable, strs: list) -> tuple[list, list | None]:
    """(values, ok flags or None when all are valid) of the table's function over strs."""
    fast = _fast_values(spec, strs)
    if fast is not None:
        try:
            return list(fast), None
        except Exception:      # a failing string (cast_float('x')): redo it string by string
            pass
    fn, args, pos = BUILTINS[spec.function], spec.args, spec.position
    values, ok = [], []
    for s in strs:             # Python per new distinct string (cast_date, cast_int, ...)
        try:
            values.append(fn(*_with(args, pos, s)))
            ok.append(True)
        except Exception:
            values.append(0)
            ok.append(False)
    return values, ok


class _Table:
    """A StringTable's numpy buffers, grown by doubling; the native globals point into them."""

    def __init__(self, spec: StringTable, address_of):
        self.spec = spec
        self.dtype = np.float64 if spec.type == FLOAT else np.int64
        self.values = np.zeros(0, self.dtype)
        self.ok = None if spec.total else np.zeros(0, np.uint8)
        self.invalid = 0     # ids filled with ok == 0 (recounted over the live ids by collect)
        self._ptr = _cell(ctypes.c_void_p, address_of, spec.symbol)
        self._ok_ptr = None if spec.total else _cell(ctypes.c_void_p, address_of, spec.symbol + ".ok")
        self.error = None if spec.total else _cell(ctypes.c_int64, address_of, spec.symbol + ".error")

    def reserve(self, n: int) -> None:
        if n > len(self.values):
            self._resize(max(64, 2 * n))

    def shrink(self, n: int) -> None:
        """Reallocate smaller when ids below n are all that remain (and the saving is worth it)."""
        if len(self.values) > max(64, 4 * n):
            self._resize(max(64, 2 * n))

    def _resize(self, cap: int) -> None:
        self.values = _grown(self.values, cap)
        self._ptr.value = self.values.ctypes.data
        if self.ok is not None:
            self.ok = _grown(self.ok, cap)
            self._ok_ptr.value = self.ok.ctypes.data

    def fill(self, where: np.ndarray, strs: list, pool: "StringPool") -> None:
        """Fill the entries of ids `where` (holding strs)."""
        values, ok = evaluate(self.spec, strs)
        n = len(strs)
        t = self.spec.type
        if t == STRING:     # results are strings too: they get ids (filled in the next round)
            if ok is not None:   # a failed entry points at its own string: a valid id
                values = [v if k else s for v, k, s in zip(values, ok, strs)]
            arr = np.fromiter(map(pool.intern, values), np.int64, n)
        elif t == FLOAT:
            arr = np.fromiter(map(float, values), np.float64, n)
        else:
            try:
                arr = np.fromiter(map(int, values), np.int64, n)
            except OverflowError:     # a Python int beyond int64 has no native value
                ok = [k and -2**63 <= int(v) < 2**63 for k, v in zip(ok or repeat(True), values)]
                arr = np.fromiter((int(v) if k else 0 for k, v in zip(ok, values)), np.int64, n)
        self.reserve(int(where.max()) + 1)
        self.values[where] = arr
        if self.ok is not None:
            self.ok[where] = 1 if ok is None else np.fromiter(ok, np.uint8, n)
            self.invalid += 0 if ok is None else n - sum(ok)
        elif ok is not None and not all(ok):
            raise AssertionError(f"{self.spec.call_text()} failed on a string but is marked total")


def _cell(ctype, address_of, symbol: str):
    """The native global `symbol` as a ctypes value (written to re-point a table)."""
    address = address_of(symbol)
    if not address:
        raise RuntimeError(f"the JIT-compiled module has no global {symbol!r}")
    return ctype.from_address(address)


def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    """A copy of a with length cap (cut or zero-padded): a fresh buffer, so shrinking frees memory."""
    out = np.zeros(cap, a.dtype)
    k = min(cap, len(a))
    out[:k] = a[:k]
    return out


class _Ranks:
    """rank[id] = position of strings[id] in the sorted order of all live strings (Python order).
    New strings are merged in: bisect per new string, one vectorised shift of the old ranks
    (entries of free ids hold garbage that no live id reads)."""

    def __init__(self, address_of):
        self.rank = np.zeros(0, np.int64)
        self._ptr = _cell(ctypes.c_void_p, address_of, RANK_SYMBOL)
        self.sorted: list[str] = []

    def _reserve(self, n: int, shrink: bool = False) -> None:
        if n > len(self.rank) or (shrink and len(self.rank) > max(64, 4 * n)):
            self.rank = _grown(self.rank, max(64, 2 * n))
            self._ptr.value = self.rank.ctypes.data

    def update(self, new_ids: list, strings: list) -> None:
        if not new_ids:
            return
        self._reserve(len(strings))
        n_old = len(self.sorted)
        if len(new_ids) > n_old // 4:        # many new strings: sort everything (C-level timsort)
            live = [i for i, s in enumerate(strings) if s is not None]
            self._set_order(sorted(live, key=strings.__getitem__), strings)
            return
        new = sorted(new_ids, key=strings.__getitem__)
        new_strs = list(map(strings.__getitem__, new))
        pos = np.fromiter(map(bisect_left, repeat(self.sorted), new_strs), np.int64, len(new))
        old = self.rank[:len(strings)]
        old += np.searchsorted(pos, old, side="right")      # new strings sorted before each old one
        self.rank[np.array(new, np.int64)] = pos + np.arange(len(new), dtype=np.int64)
        for p, s in zip(reversed(pos.tolist()), reversed(new_strs)):
            self.sorted.insert(p, s)

    def _set_order(self, order, strings: list) -> None:
        self.rank[np.asarray(order, np.int64)] = np.arange(len(order), dtype=np.int64)
        self.sorted = list(map(strings.__getitem__, order))

    def collected(self, live: np.ndarray, strings: list) -> None:
        """Re-rank after a collection kept only the ids `live` (their order is unchanged)."""
        order = live[np.argsort(self.rank[live], kind="stable")]
        self._reserve(len(strings), shrink=True)
        self._set_order(order.tolist(), strings)


COLLECT_MIN = 1 << 14     # no collection before the dictionary holds this many strings


SMALL_COLUMN = 64      # string columns up to this many rows are encoded without Arrow's hash
ONE_BYTE_FROM = 512    # from this many rows, one-character columns are encoded from their bytes
ROOT_SHIFT = 13        # StringPool.batch_ids encodes the columns batches are cut from 8,192 rows at a time
ROOT_KEEP = 4          # ... and keeps the ids of this many such blocks per column
PARENTS = 16           # parent columns whose ids StringPool keeps (_encode_slice)
PARENT_DISTINCT = 4096  # ... when they hold at most this many distinct strings


class StringPool:
    """The engine's string dictionary (id <-> string) and the property tables derived from it.
    strings[id] is None for a freed id."""

    def __init__(self, literals, tables, address_of):
        self._strings: list[str | None] = list(literals)
        self._ids: dict[str, int] = {s: i for i, s in enumerate(self._strings)}
        self.n_literals = len(self._strings)     # pinned: compiled code holds their ids
        self._tables = [_Table(t, address_of) for t in tables if t.function != RANK]
        self._fallible = [t for t in self._tables if not t.spec.total]
        self._ranks = _Ranks(address_of) if any(t.function == RANK for t in tables) else None
        self._pending: list[int] = list(range(self.n_literals))     # ids whose tables are not filled
        self._free: list[int] = []               # freed ids, largest first (pop gives the smallest)
        self.collect_min = COLLECT_MIN
        self._live_after_collect = 0
        self.collections = 0
        self._byte_ids = None         # one-character strings' ids by byte (_encode_bytes)
        self._byte_ids_at = -1        # ... valid while no collection happened since
        self._parents: dict = {}      # (buffers, ids) of columns that batches slice (_encode_slice)
        self._parents_at = -1         # ... valid while no collection happened since
        self._roots: dict = {}        # id(column) -> (column, ids): columns batches were cut from
        self._roots_at = 0            # ... valid while no collection happened since
        self.native_hash = None       # string_hash.NativeStringHash kept equal to `ids` (toaster.feed)
        self._assigning = False       # ... which gives new strings ids itself (no tables to fill)

    # New strings of a batch get ids in native code when no per-string table needs filling:
    # the dictionary learns them (Python once per string, C-level) only when something reads
    # `strings` or `ids` -- results, errors, checkpoints, a collection -- not per batch.
    @property
    def strings(self) -> list:
        if self._assigning and self.native_hash.log_count.value:
            self._learn()
        return self._strings

    @property
    def ids(self) -> dict:
        if self._assigning and self.native_hash.log_count.value:
            self._learn()
        return self._ids

    def _learn(self) -> None:
        strs = self.native_hash.take_new()
        top = len(self._strings)
        self._strings.extend(strs)
        self._ids.update(zip(strs, range(top, top + len(strs))))

    def _top_moved(self) -> None:
        """Native code's next id follows the dictionary's end (after Python added or dropped ids)."""
        if self._assigning:
            self.native_hash.assign_from(len(self._strings))

    def attach_hash(self, table) -> None:
        """Keep the native string table `table` holding every live string with its id; let it
        give new strings ids itself when no table is derived from the strings."""
        self.native_hash = table
        self._assigning = not self._tables and self._ranks is None
        self._top_moved()
        self.rehash()

    def rehash(self) -> None:
        """Fill the native table anew from the dictionary."""
        if self.native_hash is not None:
            self.native_hash.clear()
            self.native_hash.add(list(self.ids.values()), self.strings)

    def intern(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            if self._free:
                i = self._free.pop()
                self.strings[i] = s
            else:
                i = len(self._strings)
                self._strings.append(s)
                self._top_moved()
            self._ids[s] = i
            self._pending.append(i)
        return i

    def intern_new(self, strs: list) -> None:
        """intern() of distinct strings the dictionary lacks, in order, without a Python call
        per string (freed ids first, smallest first, then new ones)."""
        if self._assigning and self.native_hash.log_count.value:
            self._learn()
        free = self._free
        k = min(len(free), len(strs))
        ids = free[len(free) - k:][::-1]
        del free[len(free) - k:]
        strings = self.strings
        for i, s in zip(ids, strs):
            strings[i] = s
        top = len(strings)
        strings.extend(strs[k:])
        ids.extend(range(top, len(strings)))
        self._ids.update(zip(strs, ids))
        self._pending.extend(ids)
        self._top_moved()

    def __len__(self) -> int:
        """Live strings (those native code gave ids included, without learning them)."""
        return len(self._ids) + (self.native_hash.log_count.value if self._assigning else 0)

    def encode(self, col, reuse_parent: bool = True) -> np.ndarray:
        """Ids of a STRING column (a pyarrow string/dictionary Array or ChunkedArray, or a
        sequence of str). Arrow's C++ hash table dictionary-encodes the column; Python then
        works once per *distinct* string of the batch (a C-level map over dict.get, with
        interning of the new ones), and numpy maps the codes to ids. No Python per row."""
        if reuse_parent and col.__class__ is pa.StringArray and not col.null_count:
            ids = self._encode_slice(col)
            if ids is not None:
                return ids
        if len(col) <= SMALL_COLUMN and isinstance(col, (pa.Array, pa.ChunkedArray)):
            # a handful of rows: a C-level dict lookup per value beats Arrow's hash kernel,
            # whose set-up alone costs ~20 us (the rows are bounded: still O(1) per batch)
            values = col.to_pylist()
            ids = list(map(self.ids.get, values))
            if None in ids:
                for s in sorted({v for v, i in zip(values, ids) if i is None}):
                    self.intern(s)
                ids = list(map(self.ids.__getitem__, values))
            return np.array(ids, dtype=np.int64)
        if len(col) >= ONE_BYTE_FROM and col.__class__ is pa.StringArray:
            text = one_byte_codes(col, check_ascii=False)
            if text is not None:
                ids = self._encode_bytes(text)
                if ids is not None:
                    return ids
        if isinstance(col, pa.ChunkedArray):
            parts = [self.encode(c, reuse_parent) for c in col.chunks]
            return np.concatenate(parts) if parts else np.empty(0, np.int64)
        if not isinstance(col, pa.Array):
            col = pa.array(col, type=pa.string())
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        return self._dictionary_ids(col.dictionary, col.indices.to_numpy(zero_copy_only=False))

    def batch_ids(self, batch, j: int):
        """(int64 ids array, start): ids[start:start + len(batch)] are the ids of the batch's
        STRING column j; None when the column is not a canonical string column (the caller
        checks it in full). A batch cut by Batch.slice reads the ids of the column it was cut
        from (its `origin`), encoded 2**ROOT_SHIFT rows at a time as batches reach them: per batch
        a few lookups (and a concatenation when the batch spans blocks), no Arrow call."""
        origin = batch.origin
        if origin is not None:
            root = origin[0].columns[j]
            entry = self._roots.get(id(root)) if self._roots_at == self.collections else None
            if entry is None or entry[0] is not root:
                entry = self._root_entry(root)
            if entry[1] is not None:
                start = origin[1]
                first, last = start >> ROOT_SHIFT, (start + len(batch.signs) - 1) >> ROOT_SHIFT
                ids = entry[2].get(first)
                if ids is None:
                    ids = self._encode_block(entry, first)
                if last > first:        # across blocks: their ids side by side (a small copy)
                    ids = np.concatenate([ids] + [self._block(entry, k) for k in range(first + 1, last + 1)])
                return ids, start - (first << ROOT_SHIFT)
        col = batch.columns[j]
        if not canonical_string_column(col, len(batch.signs)):
            return None
        if col.__class__ is pa.ChunkedArray:
            if col.num_chunks == 1:         # a slice of a file's column: no copy
                col = col.chunk(0)
            elif not pa.types.is_dictionary(col.type):
                col = col.combine_chunks()      # one dictionary encoding, not one per chunk
        ids = self.encode(col)
        return (ids if ids.flags.c_contiguous else np.ascontiguousarray(ids)), 0

    def _root_entry(self, root) -> list:
        """[root, root if it is a canonical string column else None, {block: ids}]."""
        if self._roots_at != self.collections:
            self._roots.clear()
            self._roots_at = self.collections
        col = root if root is not None and canonical_string_column(root, len(root)) else None
        entry = self._roots[id(root)] = [root, col, {}]
        if len(self._roots) > PARENTS:
            del self._roots[next(iter(self._roots))]       # the oldest
        return entry

    def _block(self, entry, k: int) -> np.ndarray:
        ids = entry[2].get(k)
        return self._encode_block(entry, k) if ids is None else ids

    def _encode_block(self, entry, k: int) -> np.ndarray:
        """The ids of rows [k, k + 1) * 2**ROOT_SHIFT of the root; the last ROOT_KEEP blocks are
        kept (batches move forward: their memory is recycled, where one array of the root's
        length took a page fault per 512 rows on first touch)."""
        col, blocks = entry[1], entry[2]
        lo = k << ROOT_SHIFT
        block = col.slice(lo, min(len(col) - lo, 1 << ROOT_SHIFT))
        ids = np.empty(len(block), np.int64)
        at = 0
        for part in block.chunks if block.__class__ is pa.ChunkedArray else (block,):
            # chunk by chunk, into place: no concatenation, small temporaries
            m = len(part)
            if not (m and self._bytes_into(part, ids[at:at + m])):
                ids[at:at + m] = self.encode(part, reuse_parent=False)
            at += m
        blocks[k] = ids
        if len(blocks) > ROOT_KEEP:
            del blocks[next(iter(blocks))]
        return ids

    def _dictionary_ids(self, dictionary: pa.Array, codes: np.ndarray) -> np.ndarray:
        """Ids of the strings dictionary[codes] (Python once per distinct string)."""
        distinct = dictionary.to_pylist()
        ids = list(map(self.ids.get, distinct))
        if None in ids:
            for s in sorted({d for d, i in zip(distinct, ids) if i is None}):   # sorted: deterministic ids
                self.intern(s)
            ids = list(map(self.ids.__getitem__, distinct))
        mapping = np.array(ids, dtype=np.int64)
        return mapping.take(codes) if len(mapping) else np.zeros(len(codes), np.int64)

    def _encode_bytes(self, text: np.ndarray) -> np.ndarray | None:
        """Ids of one-character strings given as their bytes: a 256-entry table from byte to id,
        filled as characters arrive and emptied when a collection may have freed ids. None when
        some byte is not ASCII (not a whole UTF-8 character: the caller uses Arrow). take() and
        one min(): ~3 us for 1,000 rows (fancy indexing alone took 6)."""
        if self._byte_ids is None or self._byte_ids_at != self.collections:
            self._byte_ids = np.full(256, -1, dtype=np.int64)     # bytes >= 128 stay -1
            self._byte_ids_at = self.collections
        ids = self._byte_ids.take(text)
        if ids.min() < 0:
            # sorted: deterministic ids (bincount, not np.unique: that imports numpy.ma, 0.1 s)
            missing = np.flatnonzero(np.bincount(text[ids < 0], minlength=256)).tolist()
            if missing[-1] >= 128:
                return None
            for b in missing:
                self._byte_ids[b] = self.intern(chr(b))
            ids = self._byte_ids.take(text)
        return ids

    def _bytes_into(self, col, out: np.ndarray) -> bool:
        """_encode_bytes of a one-character column written into `out`; False (out untouched)
        when it is not one (the caller encodes it otherwise)."""
        text = one_byte_codes(col, check_ascii=False) if col.__class__ is pa.StringArray else None
        if text is None:
            return False
        if self._byte_ids is None or self._byte_ids_at != self.collections:
            self._byte_ids = np.full(256, -1, dtype=np.int64)
            self._byte_ids_at = self.collections
        np.take(self._byte_ids, text, out=out)
        if out.min() < 0:
            ids = self._encode_bytes(text)
            if ids is None:
                return False
            out[:] = ids
        return True

    def _encode_slice(self, col: pa.StringArray) -> np.ndarray | None:
        """Ids of a slice of a string column, as a view of the ids of the whole array it slices
        (its *parent*: the Arrow buffers it shares, e.g. the file chunk a stream is cut from),
        encoded once; a batch then costs no numpy or Arrow call at all (encoding each 1,000-row
        batch took 6-30 us of Python per column). Only parents with few distinct strings
        (PARENT_DISTINCT) are encoded whole, so that no string is interned long before it is
        read; None for the others (the caller encodes the slice itself). The parents are kept
        (their buffers pinned, so an address names one parent) up to PARENTS of them, and
        dropped when a collection may have freed ids."""
        buffers = col.buffers()
        offsets, data = buffers[1], buffers[2]
        if offsets is None or data is None or offsets.size // 4 - 1 <= len(col):
            return None                 # not a slice of something larger: nothing to reuse
        if self._parents_at != self.collections:
            self._parents.clear()
            self._parents_at = self.collections
        key = (offsets.address, data.address)
        hit = self._parents.get(key)
        if hit is None:
            hit = self._parents[key] = (buffers, self._parent_ids(buffers))
            if len(self._parents) > PARENTS:
                del self._parents[next(iter(self._parents))]       # the oldest
        ids = hit[1]
        start = col.offset
        stop = start + len(col)
        if ids is None or stop > len(ids):
            return None
        return ids[start:stop]

    def _parent_ids(self, buffers) -> np.ndarray | None:
        validity, offsets, data = buffers
        m = offsets.size // 4 - 1
        offs = np.frombuffer(offsets, dtype=np.int32, count=m + 1)
        first = int(offs[0])
        if validity is None and int(offs[m]) - first == m and 0 <= first <= data.size - m \
                and (np.arange(first, first + m + 1, dtype=np.int32)).tobytes() == offs.tobytes():
            return self._encode_bytes(np.frombuffer(data, dtype=np.uint8, count=m, offset=first))
        parent = pa.StringArray.from_buffers(m, offsets, data, validity)
        try:
            parent.validate(full=True)      # the buffers' sizes are the parent's: check, once
        except pa.ArrowInvalid:
            return None
        if m > PARENT_DISTINCT and len(parent.slice(0, PARENT_DISTINCT).unique()) > PARENT_DISTINCT // 2:
            return None         # many distinct strings (names, comments): spare encoding them twice
        encoded = parent.dictionary_encode()
        if len(encoded.dictionary) > PARENT_DISTINCT:
            return None
        indices = encoded.indices
        if indices.null_count:
            indices = indices.fill_null(0)      # never read: the slices encoded have no nulls
        return self._dictionary_ids(encoded.dictionary, indices.to_numpy())

    def sync(self) -> None:
        """Fill every table for the strings that arrived since the last sync (and for the strings
        that tables produce, e.g. substrings, until no new one appears); re-rank."""
        arrived = []
        while self._pending:
            ids, self._pending = self._pending, []
            arrived += ids
            strs = list(map(self.strings.__getitem__, ids))
            where = np.array(ids, np.int64)
            for t in self._tables:
                t.fill(where, strs, self)
        if self._ranks is not None:
            self._ranks.update(arrived, self.strings)
        if self.native_hash is not None and arrived:
            self.native_hash.add([i for i in arrived if self.strings[i] is not None], self.strings)

    def may_fail(self) -> bool:
        """Some live string has an invalid entry in a fallible table (a trigger may fail)."""
        return any(t.invalid for t in self._fallible)

    def take_error(self) -> str | None:
        """The failure a fallible table recorded during the last native call (then cleared)."""
        message = None
        for t in self._fallible:
            i = t.error.value
            if i >= 0:
                t.error.value = -1
                if message is None:
                    s = self.strings[i]
                    try:
                        v = BUILTINS[t.spec.function](*_with(t.spec.args, t.spec.position, s))
                        reason = f"{v!r} has no 64-bit value"
                    except Exception as e:
                        reason = f"{type(e).__name__}: {e}"
                    message = f"{t.spec.call_text(s)} failed ({reason})"
        return message

    def check_errors(self) -> None:
        message = self.take_error()
        if message is not None:
            raise InputError(message)

    # ------------------------------------------------------------ collection
    def maybe_collect(self, key_ids) -> bool:
        """Collect when the dictionary has doubled since the last collection. key_ids() yields
        arrays of the string ids that nonzero map entries hold in their keys."""
        if len(self) < max(self.collect_min, 2 * self._live_after_collect):
            return False
        self.collect(key_ids())
        return True

    def collect(self, key_arrays) -> None:
        n = len(self.strings)
        mark = np.zeros(n, np.bool_)
        mark[:self.n_literals] = True
        for a in key_arrays:
            mark[a] = True
        derived = [t for t in self._tables if t.spec.type == STRING]
        new = np.flatnonzero(mark)
        while len(new) and derived:      # what a STRING table gives for a kept id is kept
            found = np.unique(np.concatenate([t.values[new] for t in derived]))
            new = found[~mark[found]]
            mark[new] = True
        live = np.flatnonzero(mark)
        top = int(live[-1]) + 1 if len(live) else 0
        strings = self.strings
        for i in np.flatnonzero(~mark).tolist():
            strings[i] = None
        del strings[top:]
        self._ids = {s: i for i, s in zip(live.tolist(), map(strings.__getitem__, live.tolist()))}
        self._free = np.flatnonzero(~mark[:top])[::-1].tolist()
        for t in self._tables:
            t.shrink(top)
            if t.ok is not None:
                t.invalid = int(np.count_nonzero(t.ok[live] == 0))
        if self._ranks is not None:
            self._ranks.collected(live, strings)
        self._live_after_collect = len(live)
        self.collections += 1
        self._top_moved()
        self.rehash()
