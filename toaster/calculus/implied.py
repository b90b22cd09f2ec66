"""When a subquery's rows are implied by its enclosing query's: the enclosing WHERE's column
equalities as classes, and a mapping of the subquery's atoms onto the enclosing FROM under which
every equality of the subquery holds (toaster.calculus.from_sql leaves the NULL guard out then)."""
from __future__ import annotations

from toaster.frontend import ast as A


def _column_var(ref):
    from toaster.calculus.sql_common import column_var
    return column_var(ref)


def column_equalities(c) -> list:
    """(Var, Var) for the `column = column` conjuncts of a WHERE condition."""
    out = []
    for x in (c.args if isinstance(c, A.And) else (c,) if c is not None else ()):
        if isinstance(x, A.Comparison) and x.op == "=" and isinstance(x.left, A.ColumnRef) \
                and isinstance(x.right, A.ColumnRef):
            out.append((_column_var(x.left), _column_var(x.right)))
    return out


def classes(pairs) -> dict:
    """Union-find over variables: var -> representative."""
    parent: dict = {}

    def find(v):
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v
    for a, b in pairs:
        parent[find(a)] = find(b)
    return {v: find(v) for v in list(parent)}


def equalities_hold(atoms, outer, eqs, same) -> bool:
    rename = {}
    for a, o in zip(atoms, outer):
        rename.update(zip(a.vars, o.vars))
    cls = lambda v: same.get(rename.get(v, v), rename.get(v, v))
    return all(cls(u) == cls(v) for u, v in eqs)
