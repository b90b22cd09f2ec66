"""Walking and rebuilding the SQL AST (frozen dataclasses of toaster.frontend.ast), and the
nesting limit checked before resolution."""
from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from toaster.errors import UnsupportedError
from toaster.frontend import ast as A


def _kids(node):
    """The AST nodes directly inside `node` (through tuples), in field order."""
    for f in fields(node):
        if f.name in ("pos", "type"):
            continue
        yield from _flatten(getattr(node, f.name))


def _flatten(v):
    if isinstance(v, tuple):
        for x in v:
            yield from _flatten(x)
    elif is_dataclass(v) and not isinstance(v, type) and type(v).__module__ == A.__name__:
        yield v


_QUERIES = (A.Select, A.SetOp)


def iter_nodes(node, into_queries: bool = True):
    """`node` and every AST node below it; with into_queries=False nested queries are skipped."""
    yield node
    for k in _kids(node):
        if not into_queries and isinstance(k, _QUERIES):
            continue
        yield from iter_nodes(k, into_queries)


def _map(node, f):
    """Rebuild `node` bottom-up, applying f to every AST node."""
    if isinstance(node, tuple):
        return tuple(_map(x, f) for x in node)
    if not (is_dataclass(node) and not isinstance(node, type) and type(node).__module__ == A.__name__):
        return node
    changes = {fl.name: _map(getattr(node, fl.name), f) for fl in fields(node)
               if fl.name not in ("pos", "type")}
    return f(replace(node, **changes))


def check_nesting(stmt) -> None:
    """Refuse queries nested deeper than toaster.recursion.MAX_SUBQUERY_DEPTH (iteratively)."""
    from toaster.recursion import MAX_SUBQUERY_DEPTH
    stack = [(stmt, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SUBQUERY_DEPTH:
            pos = getattr(node, "pos", None)
            raise UnsupportedError(f"subqueries nested more than {MAX_SUBQUERY_DEPTH} deep",
                                   line=getattr(pos, "line", 0) or None, column=getattr(pos, "column", 0) or None)
        for k in _kids(node):
            stack.append((k, depth + 1 if isinstance(k, _QUERIES) else depth))
