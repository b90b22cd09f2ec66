"""The native *property tables* of the LLVM backend's strings (see strings.py for the
dictionary they are indexed by).

A string function call whose other arguments are literals, e.g. `like(x, 'forest%')` or
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
"""
from __future__ import annotations

import ctypes
import operator
import re
from bisect import bisect_left
from itertools import repeat
from dataclasses import dataclass

import numpy as np

from toaster.calculus.functions import BUILTINS
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

    def fill(self, where: np.ndarray, strs: list, pool) -> None:
        """Fill the entries of ids `where` (holding strs); STRING results are interned in pool
        (the StringPool)."""
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
