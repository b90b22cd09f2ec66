"""Scalar functions as the calculus evaluator runs them: the one registry (toaster.functions),
re-exported under the names the evaluator's callers use. External functions (CREATE FUNCTION
... AS EXTERNAL 'name') are looked up there by their external name."""
from __future__ import annotations

from collections.abc import Mapping

from toaster.functions import FUNCTIONS, call, like, register_external

__all__ = ["BUILTINS", "call", "like", "register_external"]


class _PythonSemantics(Mapping):
    """name -> the Python callable of each registered function (a view, not a copy)."""

    def __getitem__(self, name: str):
        f = FUNCTIONS.get(name)
        if f is None:
            raise KeyError(name)
        return f.python

    def __iter__(self):
        return (f.name for f in FUNCTIONS)

    def __len__(self) -> int:
        return len(FUNCTIONS.functions)


BUILTINS: Mapping = _PythonSemantics()
