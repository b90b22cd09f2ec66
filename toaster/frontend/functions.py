"""Built-in scalar functions as the frontend sees them: arities and result types for type
checking, read from the one registry (toaster.functions, which also documents their semantics)."""
from __future__ import annotations

from collections.abc import Mapping

from toaster.functions import FUNCTIONS, Function
from toaster.types import Type


class _SqlFunctions(Mapping):
    """name or alias -> Function, for the functions callable from SQL."""

    def __getitem__(self, name: str) -> Function:
        f = FUNCTIONS.get(name)
        if f is None or not f.sql:
            raise KeyError(name)
        return f

    def __iter__(self):
        return (f.name for f in FUNCTIONS if f.sql)

    def __len__(self) -> int:
        return sum(1 for _ in self)


BUILTINS: Mapping = _SqlFunctions()

# Functions of standard SQL that only make sense with NULLs: refused with a clear message.
NULL_FUNCTIONS = {"coalesce", "nullif", "ifnull", "isnull", "nvl"}


def builtin_result_type(name: str, arg_types: list[Type]) -> Type | str:
    """The result type of a built-in call, or an error message (one line) on a type error."""
    return BUILTINS[name].result(list(arg_types))
