"""The registry of named K3 rewrites: `@rewrite("name", on=NodeClass)` -> REWRITES[name].

A rewrite is `fn(expr) -> expr | None` (None: the law does not apply here). `on` names the
node class the law's left-hand side has at its root, so the driver tries only the rules that
can match a node. Registration order is priority order: when two laws match the same node,
the one registered first applies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rewrite:
    name: str
    fn: Callable          # fn(expr) -> expr | None
    on: type              # root node class of the law's left-hand side
    law: str              # the docstring's first line

    def __call__(self, e):
        return self.fn(e)


REWRITES: dict[str, Rewrite] = {}


def rewrite(name: str, on: type):
    """Decorator: register `fn` as the rewrite `name`, matching nodes of class `on`."""
    def deco(fn):
        if name in REWRITES:
            raise ValueError(f"a rewrite named {name!r} is already registered")
        law = (fn.__doc__ or "").strip().split("\n")[0]
        if not law:
            raise ValueError(f"rewrite {name!r} needs a docstring stating its law")
        REWRITES[name] = Rewrite(name, fn, on, law)
        return fn
    return deco
