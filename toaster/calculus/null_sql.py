"""SQL's NULLs and outer joins in the lowering `sql_to_calc` (issue 12), mixed into its Translator.

A nullable column is its value plus a null-flag variable (toaster.schema.Column); "e is not
NULL" is a product of guards (`null_guards`): a flag is 0, an empty scalar subquery's lifted row
count is nonzero, some COALESCE argument is present, ... (the NULL sources are found by
toaster.frontend.nulls). An outer join is the inner join plus the unmatched rows padded with
NULLs, "unmatched" being a NOT EXISTS over the padded side (`outer_join`).
"""
from __future__ import annotations

import itertools

from toaster.calculus.implied import classes as _classes, equalities_hold as _equalities_hold
from toaster.calculus.ir import (AggSum, Cmp, Const, Func, Lift, Prod, Rel, Var, Value, mk_prod, mk_sum, neg,
                                 ONE, ZERO)
from toaster.frontend import ast as A
from toaster.frontend.nulls import is_single_row, null_aggregates, null_key, nullable_subqueries, refuse_null
from toaster.calculus.sql_common import (_any, _is_aggregate, _unsupported, column_var,
                                         output_names)
from toaster.runtime.nulls import NULL_DATE
from toaster.schema import NULL_FLAG
from toaster.types import DATE, FLOAT, INT, STRING


def flag_var(ref: A.ColumnRef) -> Var:
    """The null flag (1 = NULL) of a nullable column: the variable of its physical flag column."""
    return Var(f"{ref.source}_{ref.name}{NULL_FLAG}", INT)


def null_default(t) -> Const:
    """The value a NULL holds (toaster.schema.Column): every NULL of a type is the same key."""
    return Const(NULL_DATE if t == DATE else "" if t == STRING else 0.0 if t == FLOAT else 0, t)


def _present(cols) -> list:
    """Null flags 0 for the columns of a row that is there (physical flags come with the row)."""
    return [Lift(f, Value(Const(0, INT))) for _, f, physical in cols if not physical]


def _padded(cols) -> list:
    """A row of NULLs: every value the type's NULL value, every flag 1."""
    return [x for v, f, _ in cols for x in (Lift(v, Value(null_default(v.type))), Lift(f, Value(Const(1, INT))))]


def _outer_joins_last(items) -> list:
    """FROM items in translation order: an outer join's ON and NOT EXISTS read the other items."""
    return [it for it in items if not isinstance(it, A.OuterJoinItem)] + \
        [it for it in items if isinstance(it, A.OuterJoinItem)]


class NullTranslation:
    """The Translator's methods for NULLs and outer joins (see the module docstring)."""

    def coalesce_branches(self, z: Var, args, aggs):
        """COALESCE as a sum of branches binding z: the first argument that is not NULL (all
        NULL: the type's NULL value, where null_guards makes the COALESCE NULL)."""
        branches, none_before = [], []
        for a in args:
            present = mk_prod(self.null_guards(a, aggs))
            pre, t = self.term(a, aggs)
            if z.type == FLOAT and t.type != FLOAT:      # an int argument of a float COALESCE
                t = Func("cast_float", (t,), FLOAT)
            branches.append(mk_prod(none_before + [present] + pre + [Lift(z, Value(t))]))
            if present == ONE:
                return mk_sum(branches)
            none_before = none_before + [mk_sum([ONE, neg(present)])]
        branches.append(mk_prod(none_before + [Lift(z, Value(null_default(z.type)))]))
        return mk_sum(branches)

    def null_guards(self, e, aggs=None) -> list:
        """Factors that are 1 iff the value e is not NULL: for each scalar subquery that can be
        empty (toaster.frontend.nulls), a lifted count of its rows that must be nonzero."""
        out = []
        for sub in nullable_subqueries(e, aggs):
            if aggs is not None and null_key(sub) in aggs:     # an aggregate or group key of aggs
                guard = [aggs[null_key(sub)]]
            elif isinstance(sub, A.NullLiteral):
                guard = [ZERO]
            elif isinstance(sub, A.ColumnRef):
                guard = [Cmp("=", flag_var(sub), Const(0, INT))]
            elif isinstance(sub, A.FuncCall) and sub.name == "coalesce":     # some argument present
                guard = [_any([mk_prod(self.null_guards(a, aggs)) for a in sub.args], self.fresh)]
            elif isinstance(sub, A.Case):            # the value the CASE takes is present
                parts, none_before = [], []
                for c, v in sub.whens:
                    taken = self.cond(c, aggs)
                    parts.append(mk_prod(none_before + [taken] + self.null_guards(v, aggs)))
                    none_before = none_before + [mk_sum([ONE, neg(taken)])]
                parts.append(mk_prod(none_before + (self.null_guards(sub.else_, aggs) if sub.else_ is not None else [])))
                guard = [mk_sum(parts)]
            elif isinstance(sub, A.FuncCall):        # NULLIF(a, b): a present and not equal to b
                a, b = sub.args
                fa, ta = self.term(a, aggs)
                fb, tb = self.term(b, aggs)
                same = mk_prod(self.null_guards(b, aggs) + fa + fb + [Cmp("=", ta, tb)])
                guard = self.null_guards(a, aggs) + [mk_sum([ONE, neg(same)])]
            else:
                guard = self.subquery_guard(sub)
            for f in guard:
                if f not in out:
                    out.append(f)
        return out

    def subquery_guard(self, sub: A.ScalarSubquery) -> list:
        """Factors that are 1 iff the scalar subquery has a value: each of its SUM / AVG / MIN /
        MAX aggregates has a row (one lifted count per distinct aggregated row set), and the
        subqueries its value reads outside aggregates are not NULL."""
        q = sub.query
        target = q.targets[0].expr
        if is_single_row(q):
            return self.null_guards(target)
        base = self.body(q)
        if not _is_aggregate(q):       # a lookup: it has a row, and that row's value is not NULL
            return [self._count_test(AggSum((), mk_prod(base + self.null_guards(target))), False)]
        counts = []
        for call in null_aggregates(target):
            rows = mk_prod(base + (self.null_guards(call.args[0]) if call.args else []))
            if rows not in counts and not self._implied_nonempty(rows):
                counts.append(rows)
        return [self._count_test(AggSum((), rows), False) for rows in counts] + self.null_guards(target)

    def _implied_nonempty(self, rows) -> bool:
        """Whether `rows` (relation atoms and column equalities) has a row whenever the enclosing
        query has one: each atom maps onto an atom of the enclosing FROM so that every equality
        holds by the enclosing WHERE's equalities -- PSP's `SUM(B2.V) FROM B B2` inside `FROM A,
        B` (VLDBJ'14 Fig. 5), Q18's `SUM(L3.QTY) FROM LI L3 WHERE O.OK = L3.OK` inside a FROM
        joining LI on O.OK (Fig. 4). Then the subquery's NULL guard is always 1 and is left out."""
        if not self._enclosing:
            return False
        outer_atoms, outer_eqs = self._enclosing[-1]
        atoms, eqs = [], []
        for f in (rows.factors if isinstance(rows, Prod) else (rows,)):
            if isinstance(f, Rel):
                atoms.append(f)
            elif isinstance(f, Cmp) and f.op == "=" and isinstance(f.left, Var) and isinstance(f.right, Var):
                eqs.append((f.left, f.right))
            else:
                return False
        same = _classes(outer_eqs)
        choices = [[o for o in outer_atoms if o.name == a.name] for a in atoms]
        return any(_equalities_hold(atoms, pick, eqs, same) for pick in itertools.product(*choices))

    def item_rows(self, item):
        """(rows factor, [(value var, flag var, physically flagged)] per column) of a FROM item."""
        if isinstance(item, A.RelItem):
            decl = self.relations[item.relation]
            rel = Rel(decl.name, tuple(Var(f"{item.alias}_{c.name}", c.type) for c in decl.columns))
            cols = [(Var(f"{item.alias}_{c.name}", c.type), Var(f"{item.alias}_{c.name}{NULL_FLAG}", INT), c.nullable)
                    for c in decl.logical_columns]
            return rel, cols
        if isinstance(item, A.SubqueryItem):
            outs, rows = self.rows(item.query)
            names = output_names(item.query)
            want = [Var(f"{item.alias}_{n}", v.type) for n, v in zip(names, outs)]
            for o, w in zip(outs, want):        # a nullable column ALIAS_NAME: flag ALIAS_NAME__NULL
                if o in self.flags:
                    self.flags[w] = Var(f"{w.name}{NULL_FLAG}", INT)
            return self.renamed(rows, outs, want), \
                [(v, Var(f"{v.name}{NULL_FLAG}", INT), v in self.flags) for v in want]
        if isinstance(item, A.JoinedItems):       # the inner join of its items (outer joins last)
            parts = [self.item_rows(it) for it in _outer_joins_last(item.items)]
            on = [] if item.on is None else [self.cond(item.on)]
            return mk_prod([rows for rows, _ in parts] + on), [c for _, cols in parts for c in cols]
        if isinstance(item, A.OuterJoinItem):     # inside a JoinedItems: its padded columns,
            padded = [] if item.left is None else self.item_rows(item.left)[1]   # flags bound by it
            return self.outer_join(item), [(v, f, True) for v, f, _ in padded + self.item_rows(item.right)[1]]
        raise _unsupported(f"FROM item {type(item).__name__}", item)

    def outer_join(self, item: A.OuterJoinItem):
        """An outer join as the inner join plus the unmatched rows, padded with NULLs: a sum of
        branches, each binding every padded column's value and null flag. Whether a preserved row
        is unmatched is a NOT EXISTS, i.e. a maintained count of its matches (nested_delta)."""
        right, rcols = self.item_rows(item.right)
        on = self.cond(item.on)
        if item.kind == "LEFT":
            matched = mk_prod([right, on] + _present(rcols))
            unmatched = mk_prod([self.cond(item.no_match_right)] + _padded(rcols))
            return mk_sum([matched, unmatched])
        left, lcols = self.item_rows(item.left)
        return mk_sum([mk_prod([left, right, on] + _present(lcols) + _present(rcols)),
                       mk_prod([left] + _present(lcols) + [self.cond(item.no_match_right)] + _padded(rcols)),
                       mk_prod([right] + _present(rcols) + [self.cond(item.no_match_left)] + _padded(lcols))])

    def nullable_value(self, e, aggs=None) -> tuple:
        """(v, f, factors): v is e's value and f its null flag; where e is NULL, v is the
        type's NULL value, so all NULLs are one key."""
        if isinstance(e, A.ColumnRef) and (aggs is None or e not in aggs):
            return column_var(e), flag_var(e), []
        if aggs is not None and e in aggs and aggs[e] in self.flags:    # a nullable group key
            return aggs[e], self.flags[aggs[e]], []
        pre, t = self.term(e, aggs)
        v, f = self.fresh("t", t.type), self.fresh("null", INT)
        present = mk_prod(self.null_guards(e, aggs))
        value = mk_prod([present] + pre + [Lift(v, Value(t)), Lift(f, Value(Const(0, INT)))])
        null = mk_prod([mk_sum([ONE, neg(present)]), Lift(v, Value(null_default(t.type))),
                        Lift(f, Value(Const(1, INT)))])
        return v, f, [mk_sum([value, null])]

    def physical(self, outs) -> tuple:
        """Output variables with the null flag of each nullable one right after it."""
        return tuple(x for v in outs for x in ((v, self.flags[v]) if v in self.flags else (v,)))

    def renamed(self, expr, outs, want):
        """expr with outputs `outs` re-exposed as `want`, null flags included (a side without a
        flag where `want` has one: never NULL, flag 0)."""
        if tuple(outs) == tuple(want):
            return expr
        lifts = []
        for o, w in zip(outs, want):
            lifts.append(Lift(w, Value(o)))
            if w in self.flags:
                lifts.append(Lift(self.flags[w], Value(self.flags[o] if o in self.flags else Const(0, INT))))
        return AggSum(self.physical(want), mk_prod([expr] + lifts))

    def refuse_nullable_column(self, out, what: str, q):
        """A subquery of IN / ALL / SOME whose column can be NULL (unknown matches): refused."""
        if out in self.flags:
            raise refuse_null(f"a nullable column as the column of an {what} subquery", q)


    def membership_with_nulls(self, c, aggs, negate: bool):
        """`x [NOT] IN (q)`, `x op SOME (q)`, `x op ALL (q)` whose subquery column s can be NULL,
        in three-valued logic: 1 where c is true (negate: false). For x IN q (SOME alike):
        true where some non-NULL s matches x; false where q is empty, or x is not NULL and
        no s matches and no s is NULL; unknown otherwise. x op ALL q: true where q is empty, or
        x is not NULL and every s is non-NULL and matches; false where some non-NULL s fails."""
        e, q = c.expr, c.query
        f, t = self.term(e, aggs)
        present = mk_prod(self.null_guards(e, aggs))      # x is not NULL

        def count(keep):        # the subquery's rows (s, its flag) kept by keep(s, flag)
            outs, rows = self.rows(q)
            if len(outs) != 1:
                raise _unsupported(f"{'IN' if isinstance(c, A.InQuery) else c.quantifier} over a "
                                   "subquery with several columns", c)
            return AggSum((), mk_prod([rows] + keep(outs[0], self.flags[outs[0]])))

        def non_null(flag):
            return Cmp("=", flag, Const(0, INT))

        def empty():
            return self._count_test(count(lambda s, fl: []), True)

        if isinstance(c, A.Quantified) and c.quantifier == "ALL":
            fails = lambda s, fl: [non_null(fl), mk_sum([ONE, neg(Cmp(c.op, t, s))])]  # noqa: E731
            null_or_fails = lambda s, fl: [mk_sum([Cmp("=", fl, Const(1, INT)),  # noqa: E731
                                                   mk_prod(fails(s, fl))])]
            true = mk_sum([mk_prod([present] + f + [self._count_test(count(null_or_fails), True)]),
                           mk_prod([mk_sum([ONE, neg(present)]), empty()])])
            false = mk_prod([present] + f + [self._count_test(count(fails), False)])
            return false if negate else true
        op = "=" if isinstance(c, A.InQuery) else c.op
        matches = lambda s, fl: [non_null(fl), Cmp(op, t, s)]      # noqa: E731
        nulls = lambda s, fl: [Cmp("=", fl, Const(1, INT))]        # noqa: E731
        true = mk_prod([present] + f + [self._count_test(count(matches), False)])
        false = mk_sum([mk_prod([present] + f + [self._count_test(count(matches), True),
                                                 self._count_test(count(nulls), True)]),
                        mk_prod([mk_sum([ONE, neg(present)]), empty()])])
        if isinstance(c, A.InQuery) and c.negated:
            true, false = false, true
        return false if negate else true
