"""One integer semantics on every engine: INT values are 64-bit signed, and a value that leaves
[-2^63, 2^63) fails the batch with IntegerOverflowError naming the map, the batch rolled back.

The Python engines compute with exact Python ints, so they check where a value is stored: every
integer written to a map (interp, calc, spark), and in the k3/imp interpreters every `+ - *` (the
same operations the llvm backend checks natively). A `Journal` records each map write's previous
value during a batch, so a batch that fails half-way is undone.
"""
from __future__ import annotations

from toaster.errors import INT64_MAX, INT64_MIN, IntegerOverflowError, overflow_message

__all__ = ["INT64_MIN", "INT64_MAX", "ArithmeticOverflow", "checked", "check_value", "Journal",
           "overflow_error", "run_atomically"]

_ABSENT = object()
_CLEARED = object()


class ArithmeticOverflow(Exception):
    """An integer operation left the 64-bit range; the statement that catches it knows the map."""


def checked(v):
    """v, unless it is an int outside the 64-bit range (ArithmeticOverflow)."""
    if v.__class__ is int and (v > INT64_MAX or v < INT64_MIN):
        raise ArithmeticOverflow()
    return v


def check_value(v, map_name: str, queries) -> None:
    """Raise IntegerOverflowError when an int about to be stored in `map_name` is out of range."""
    if v.__class__ is int and (v > INT64_MAX or v < INT64_MIN):
        raise overflow_error(map_name, queries)


def overflow_error(map_name: str, queries) -> IntegerOverflowError:
    return IntegerOverflowError(overflow_message(map_name, queries))


class Journal:
    """Previous values of the map entries a batch wrote (dict maps), newest last."""

    __slots__ = ("log",)

    def __init__(self):
        self.log: list = []

    def write(self, table: dict, key) -> None:
        """Call before table[key] changes (set, add or pop)."""
        self.log.append((table, key, table.get(key, _ABSENT)))

    def clear(self, table: dict) -> None:
        """Call before table.clear()."""
        if table:
            self.log.append((table, _CLEARED, dict(table)))

    def rollback(self) -> None:
        for table, key, old in reversed(self.log):
            if key is _CLEARED:
                table.clear()
                table.update(old)
            elif old is _ABSENT:
                table.pop(key, None)
            else:
                table[key] = old
        self.log.clear()

    def forget(self) -> None:
        self.log.clear()


def run_atomically(journal: Journal, run, *args) -> None:
    """run(*args); if it raises, undo every write the journal recorded since, then re-raise."""
    journal.forget()
    try:
        run(*args)
    except BaseException:
        journal.rollback()
        raise
    journal.forget()


def blame_maps(body, written) -> list:
    """Per top-level statement of a trigger body, the map an overflow in it that is not inside a
    map write is attributed to: the first map written by that statement or, if it writes none
    (a local declared for later), by the statements after it; None when there is none.
    `written(stmt)` yields the maps a statement writes, in order."""
    out, later = [], None
    for stmt in reversed(body):
        later = next(iter(written(stmt)), later)
        out.append(later)
    return out[::-1]


def imp_writes(stmt):
    """Maps an imperative-IR statement adds to or sets, in order (MapClear is no write of a value)."""
    from toaster.imperative.ir import ForEach, If, MapAdd, MapSet
    match stmt:
        case MapAdd(m, _, _) | MapSet(m, _, _):
            yield m
        case ForEach(body=body):
            for s in body:
                yield from imp_writes(s)
        case If(_, then, orelse):
            for s in then + orelse:
                yield from imp_writes(s)
