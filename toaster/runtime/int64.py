"""One integer semantics on every engine: INT values are 64-bit signed, and a value that leaves
[-2^63, 2^63) fails the batch with IntegerOverflowError naming the map, the batch rolled back.

The Python engines compute with exact Python ints, so they check where a value is stored: every
integer written to a map (interp, calc, spark), and in the k3/imp interpreters every `+ - *` (the
same operations the llvm backend checks natively). A `Journal` records each map write's previous
value during a batch, so a batch that fails half-way is undone.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass

from toaster.errors import INT64_MAX, INT64_MIN, IntegerOverflowError

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


def check_value(v, map_name: str, queries, program=None) -> None:
    """Raise IntegerOverflowError when an int about to be stored in `map_name` is out of range."""
    if v.__class__ is int and (v > INT64_MAX or v < INT64_MIN):
        raise overflow_error(map_name, queries, program)


def overflow_error(map_name: str, queries, program=None) -> IntegerOverflowError:
    """`view Q (map M) left the 64-bit range in this batch; the batch was not applied`. A map
    that is no view's value map (auxiliary, temporary, a batch's pre-aggregated delta) is named
    with the views it feeds in `program` (an M3, K3 or imperative program)."""
    views = [q.name for q in queries if map_name in tuple(q.value_maps)]
    if views:
        who = f"view {', '.join(views)} (map {map_name})"
    else:
        fed = maps_fed(map_name, program) if program is not None else {map_name}
        views = [q.name for q in queries if fed & set(q.value_maps)]
        who = f"view {', '.join(views)} (auxiliary map {map_name})" if views else f"map {map_name}"
    return IntegerOverflowError(f"{who} left the 64-bit range in this batch; the batch was not applied")


# node class -> the field naming the map it reads / writes, in the M3, K3 and imperative IRs
_READS = {"MapRef": "name", "MapGet": "map", "ForEach": "map", "Lookup": "map", "Slice": "map",
          "Exchange": "source"}
_WRITES = {"Statement": "target", "MapAdd": "map", "MapSet": "map", "Update": "map", "Replace": "map",
           "Exchange": "target"}


def _nodes(root):
    todo = [root]
    while todo:
        n = todo.pop()
        if isinstance(n, (tuple, list)):
            todo.extend(n)
        elif is_dataclass(n) and not isinstance(n, type):
            yield n
            todo.extend(getattr(n, f.name) for f in fields(n))


def maps_fed(map_name: str, program) -> set:
    """`map_name` and every map whose value a trigger statement computes from it, transitively.
    A top-level statement that writes no map (a local declared for later) counts as part of the
    next one that does. (M3: trigger statements; K3, imp: trigger bodies; dist: block items.)"""
    feeds: dict = {}
    for trig in program.triggers:
        reads: set = set()
        top = getattr(trig, "statements", None) or getattr(trig, "body", None) or \
            [it for b in trig.blocks for it in b.items]
        for stmt in top:
            writes = set()
            for n in _nodes(stmt):
                kind = type(n).__name__
                if kind in _READS:
                    reads.add(getattr(n, _READS[kind]))
                if kind in _WRITES:
                    writes.add(getattr(n, _WRITES[kind]))
            if writes:
                for r in reads:
                    feeds.setdefault(r, set()).update(writes)
                reads = set()
    seen, todo = {map_name}, [map_name]
    while todo:
        for w in feeds.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


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


class NoJournal(Journal):
    """For an interpreter run outside an engine: nothing to undo, nothing kept."""

    def write(self, table: dict, key) -> None:
        pass

    def clear(self, table: dict) -> None:
        pass


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
    """Maps an imperative-IR statement adds to or sets, in order (MapClear is no write of a
    value). By class name: this module sits below the stages."""
    kind = type(stmt).__name__
    if kind in ("MapAdd", "MapSet"):
        yield stmt.map
    elif kind == "ForEach":
        for s in stmt.body:
            yield from imp_writes(s)
    elif kind == "If":
        for s in stmt.then + stmt.orelse:
            yield from imp_writes(s)
