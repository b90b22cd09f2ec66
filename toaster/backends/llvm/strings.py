"""Strings in the LLVM backend: the engine's string dictionary (`StringPool`).

Native code sees a STRING as an i64 id into the engine's dictionary. Per-string-id *property
tables* (LIKE, substring, rank, ...) live in string_tables.py; the native string hash table
that encodes a batch's columns inside toaster.feed (and, when no property table is derived,
gives new strings ids itself; the dictionary learns them when it is read) in string_hash.py.

Ids are reused: `collect` (run by the engine when the dictionary has doubled since the last
collection) keeps the literals, every id a nonzero map entry holds in a key, and whatever a
STRING-valued table gives for a kept id (transitively); it frees the rest, shrinks the tables
when the highest live id allows, and hands the freed ids out again, smallest first. A zero-valued
map entry keeping a freed id is harmless: it means "absent" under whatever string reuses the id.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from toaster.calculus.functions import BUILTINS
from toaster.errors import InputError
from toaster.runtime.checks import canonical_string_column
from toaster.runtime.string_codes import one_byte_codes
from toaster.types import STRING

from toaster.backends.llvm.string_tables import (RANK, RANK_SYMBOL, StringTable, _Ranks, _Table,  # noqa: F401
                                                 _with, is_total)

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
