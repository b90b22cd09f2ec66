"""Scopes of name resolution shared by toaster.frontend.resolve and resolve_joins: the FROM
sources a column reference can name, output columns of resolved queries, and error helpers."""
from __future__ import annotations

from dataclasses import dataclass, replace

from toaster.errors import SemanticError
from toaster.frontend import ast as A
from toaster.types import Type, promote


def _err(msg: str, node, cls=SemanticError):
    pos = getattr(node, "pos", A.NOPOS) or A.NOPOS
    return cls(msg, line=pos.line or None, column=pos.column or None)


def output_columns(q) -> tuple:
    """tuple[(name, Type)] of a resolved Select or SetOp (a SetOp: left names, promoted types)."""
    if isinstance(q, A.SetOp):
        left, right = output_columns(q.left), output_columns(q.right)
        return tuple((n, _union_type(t, u)) for (n, t), (_, u) in zip(left, right))
    return tuple((t.alias, t.expr.type) for t in q.targets)


def _union_type(a: Type, b: Type) -> Type | None:
    if a.is_numeric and b.is_numeric:
        return promote(a, b)
    return a if a == b else None


def comparable(a: Type, b: Type) -> bool:
    return (a.is_numeric and b.is_numeric) or a == b


# ------------------------------------------------------------------------ scopes


@dataclass
class _Source:
    written: str               # the alias as written in this FROM
    alias: str                 # program-unique alias
    columns: tuple             # tuple[(name, Type)]
    nullable: frozenset = frozenset()   # names of the columns that can hold NULL


class _Scope:
    def __init__(self, sources: list, parent: "_Scope | None", merged: dict | None = None):
        self.sources = sources
        self.parent = parent
        self.merged = merged or {}   # (alias, column) -> representative, for NATURAL JOIN copies

    def lookup(self, ref: A.ColumnRef) -> A.ColumnRef:
        scope = self
        if ref.qualifier is not None:
            while scope is not None:
                src = next((s for s in scope.sources if s.written == ref.qualifier), None)
                if src is not None:
                    t = dict(src.columns).get(ref.name)
                    if t is None:
                        raise _err(f"{ref.qualifier} has no column {ref.name}", ref)
                    return replace(ref, source=src.alias, type=t, nullable=ref.name in src.nullable)
                scope = scope.parent
            raise _err(f"unknown relation or alias {ref.qualifier}", ref)
        while scope is not None:
            hits = [(s, t) for s in scope.sources for n, t in s.columns if n == ref.name]
            if len(hits) > 1:
                reps = {scope.merged.get((s.alias, ref.name), (s.alias, ref.name)) for s, _ in hits}
                if len(reps) > 1:
                    raise _err(f"ambiguous column {ref.name} (in {', '.join(s.written for s, _ in hits)})", ref)
            if hits:
                src, t = hits[0]
                return replace(ref, source=src.alias, type=t, nullable=ref.name in src.nullable)
            scope = scope.parent
        raise _err(f"unknown column {ref.name}", ref)

    def aliases(self) -> set:
        return {s.alias for s in self.sources}
