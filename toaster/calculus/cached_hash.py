"""Immutable IR nodes that compute their hash once.

A frozen dataclass re-hashes its whole subtree on every `hash()` (a Var hashes its name and its
Type, an enum whose `__hash__` is Python code): the simplifier's sets and dicts of variables
and expressions did ~370 K such calls for TPC-H Q17, a fifth of its compile time. The cached
value is the dataclass's own hash, so every set and dict orders exactly as before.
"""
from __future__ import annotations


class HashOnce:
    """Base class of a `@cached_hash @dataclass(frozen=True, slots=True)` node: the slot
    that keeps the hash (not a field: equality, printing and pickling ignore it)."""
    __slots__ = ("_hash",)


def cached_hash(cls):
    """Class decorator (outside @dataclass): hash() computes the dataclass's hash once per node."""
    computed = cls.__hash__

    def __hash__(self):
        try:
            return self._hash
        except AttributeError:
            h = computed(self)
            object.__setattr__(self, "_hash", h)      # the node is frozen; the slot is not a field
            return h

    cls.__hash__ = __hash__
    return cls
