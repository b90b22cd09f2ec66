"""FROM-clause resolution (a mixin of toaster.frontend.resolve._Resolver): relations, FROM
subqueries, inner / NATURAL / CROSS joins (flattened into from_items and WHERE) and outer joins
(OuterJoinItem), `*` expansion."""
from __future__ import annotations

from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.nulls import nullable_outputs
from toaster.frontend.scope import _Scope, _Source, _err, comparable, output_columns


class JoinResolution:
    """FROM items of a select; needs the resolver's query / cond / unique_alias and its
    relations, visible_relations and statement_relations."""

    def outer_join(self, item: A.Join, parent, sources, items, on_conds, merged) -> None:
        """LEFT / RIGHT / FULL JOIN: its ON condition sees the items to its left, as in SQL. A
        padded side of one FROM item (a relation or a subquery) is padded as it is; a padded side
        that is itself a join becomes one JoinedItems, the inner join of its items under their ON
        conditions. The padded side is wrapped in an OuterJoinItem carrying the ON condition and a
        NOT EXISTS over a copy of it (no row matches: one row of NULLs), and its columns become
        nullable above the join."""
        first = len(sources)
        left = self.joined_side(item.left, parent, sources, items, on_conds, merged, padded=item.kind != "LEFT")
        right = self.joined_side(item.right, parent, sources, items, on_conds, merged, padded=item.kind != "RIGHT")
        n_left = first + left[0]
        scope = _Scope(list(sources), parent, merged)
        on = self.cond(item.on, scope, "ON")

        def no_match(original):       # NOT EXISTS (SELECT * FROM <a copy> WHERE on): the copy shadows it
            q = A.Select((A.Target(A.Star(None, item.pos), None, item.pos),), (original,), item.on, (), pos=item.pos)
            return self.cond(A.Exists(q, True, item.pos), scope, "ON")
        if item.kind == "LEFT":
            wrapped = A.OuterJoinItem("LEFT", None, right[1], on, no_match(item.right), None, item.pos)
            padded = sources[n_left:]
        elif item.kind == "RIGHT":
            wrapped = A.OuterJoinItem("LEFT", None, left[1], on, no_match(item.left), None, item.pos)
            padded = sources[first:n_left]
        else:
            wrapped = A.OuterJoinItem("FULL", left[1], right[1], on, no_match(item.right),
                                      no_match(item.left), item.pos)
            padded = sources[first:]
        items.append(wrapped)
        for src in padded:
            src.nullable = frozenset(n for n, _ in src.columns)

    def joined_side(self, side, parent, sources, items, on_conds, merged, padded: bool) -> tuple:
        """Resolve one side of an outer join into sources: (its number of sources, the FROM item
        padding it, or None where it is not padded -- its items then stay in `items`, its ON
        conditions in on_conds). A padded join's ON conditions are resolved here, before its
        columns become nullable, and kept inside its JoinedItems."""
        n_sources, n_items, n_conds = len(sources), len(items), len(on_conds)
        self.from_item(side, parent, sources, items, on_conds, merged)
        if not padded:
            return len(sources) - n_sources, None
        mine, conds = items[n_items:], on_conds[n_conds:]
        del items[n_items:], on_conds[n_conds:]
        if len(mine) == 1 and not conds and isinstance(mine[0], (A.RelItem, A.SubqueryItem)):
            return len(sources) - n_sources, mine[0]
        scope = _Scope(list(sources), parent, merged)
        resolved = [c if done else self.cond(c, scope, "ON") for done, c in conds]
        on = None if not resolved else resolved[0] if len(resolved) == 1 else A.And(tuple(resolved), side.pos)
        return len(sources) - n_sources, A.JoinedItems(tuple(mine), on, side.pos)

    def from_item(self, item, parent, sources, items, on_conds, merged) -> None:
        match item:
            case A.Join(kind, left, right, on) if kind in ("LEFT", "RIGHT", "FULL"):
                self.outer_join(item, parent, sources, items, on_conds, merged)
                return
            case A.Join(kind, left, right, on):
                self.from_item(left, parent, sources, items, on_conds, merged)
                n_left = len(sources)
                self.from_item(right, parent, sources, items, on_conds, merged)
                if kind == "NATURAL":
                    on_conds.extend((True, c) for c in
                                    _natural_equalities(sources[:n_left], sources[n_left:], merged, item.pos))
                elif on is not None:
                    on_conds.append((False, on))
                return
            case A.RelItem(relation, written):
                decl = self.relations.get(relation)
                if decl is None:
                    raise _err(f"unknown relation {relation}", item)
                if relation not in self.visible_relations:
                    raise _err(f"unknown relation {relation} (it is declared after this statement)", item)
                columns = tuple((c.name, c.type) for c in decl.logical_columns)
                nullable = frozenset(c.name for c in decl.logical_columns if c.nullable)
                new = None
            case A.SubqueryItem(query, written):
                new_query = self.query(query, parent, True)
                columns = output_columns(new_query)
                nullable = frozenset(n for (n, _), null in zip(columns, nullable_outputs(new_query)) if null)
                new = new_query
            case _:
                raise _err(f"unexpected FROM item {type(item).__name__}", item, UnsupportedError)
        if any(s.written == written for s in sources):
            raise _err(f"duplicate relation name {written} in FROM (use aliases)", item)
        alias = self.unique_alias(written)
        sources.append(_Source(written, alias, columns, nullable))
        if isinstance(item, A.RelItem):
            self.statement_relations.append((alias, decl))
            items.append(A.RelItem(item.relation, alias, item.pos))
        else:
            items.append(A.SubqueryItem(new, alias, item.pos))

    def expand_star(self, star: A.Star, scope: _Scope) -> list:
        if star.qualifier is None:
            srcs = scope.sources
            if not srcs:
                raise _err("SELECT * without FROM", star)
        else:
            srcs = [s for s in scope.sources if s.written == star.qualifier]
            if not srcs:
                raise _err(f"unknown relation or alias {star.qualifier}", star)
        return [A.Target(A.ColumnRef(s.written, n, star.pos, s.alias, t, n in s.nullable), n, star.pos)
                for s in srcs for n, t in s.columns]

    def every_from_column(self, call: A.AggCall, scope: _Scope) -> tuple:
        """The arguments of COUNT(DISTINCT) written without any, as DBToaster's parser accepts it:
        every column of its SELECT's FROM clause (in FROM order, as `*`), so it counts the distinct
        input rows of the group; every engine then maintains it as COUNT(DISTINCT c1, c2, ...)."""
        if not scope.sources:
            raise _err("COUNT(DISTINCT) without an argument needs a FROM clause (it counts distinct input rows)",
                       call)
        return tuple(t.expr for t in self.expand_star(A.Star(None, call.pos), scope))


def _natural_equalities(left: list, right: list, merged: dict, pos) -> list:
    """NATURAL JOIN: equate every right column with the first same-named left column."""
    out = []
    for r in right:
        for name, t in r.columns:
            hit = next(((l, u) for l in left for n, u in l.columns if n == name), None)
            if hit is None:
                continue
            l, u = hit
            if not comparable(t, u):
                raise _err(f"NATURAL JOIN cannot compare {l.written}.{name} ({u}) with {r.written}.{name} ({t})",
                           A.Target(None, None, pos))
            rep = merged.get((l.alias, name), (l.alias, name))
            merged[(r.alias, name)] = rep
            merged.setdefault((l.alias, name), rep)
            out.append(A.Comparison("=", A.ColumnRef(l.written, name, pos, l.alias, u, name in l.nullable),
                                    A.ColumnRef(r.written, name, pos, r.alias, t, name in r.nullable), pos))
    return out
