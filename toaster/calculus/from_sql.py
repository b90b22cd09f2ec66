"""Lowering `sql_to_calc`: resolved SQL -> AGCA (VLDBJ'14 §3.2, Hot Dog §3.1).

* FROM items become relation atoms over variables ALIAS_COLUMN (aliases are unique in the
  program); FROM subqueries become their row expressions; WHERE becomes a 0/1-valued factor.
* Conditions: AND is a product, OR is a + b - a*b, NOT is 1 - c, EXISTS / IN / SOME / ALL
  count matching rows of the subquery into a lifted variable and compare it with 0.
* Scalar subqueries, CASE and other values that need an aggregate are lifted into fresh
  variables (x := Q) placed before the factor that uses them.
* A top-level aggregate query is materialized piecewise (VLDBJ'14 Alg. 2): one map per
  SUM / COUNT, AVG as SUM and COUNT, MIN / MAX / COUNT(DISTINCT) as value-multiplicity maps
  keyed by the group and the value (exact under deletions), reconstituted on read by result
  terms (toaster.calculus.results). Nested aggregates use AggSum / Extremum inside lifts.
"""
from __future__ import annotations

import itertools

from dataclasses import dataclass

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, Extremum, Func, Lift, Prod, Rel, Sum,
                                 Value, Var, expr_type, mk_prod, mk_sum, neg, schema, ONE, ZERO)
from toaster.calculus.maps import MapDecl
from toaster.calculus.results import KeyRef, MapReduce, MapValue
from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.constants import folded
from toaster.calculus.implied import classes as _classes, column_equalities as _column_equalities, equalities_hold as _equalities_hold
from toaster.frontend.nulls import (condition_is_nullable, is_single_row, null_aggregates, nullable_subqueries,
                                    refuse_null)
from toaster.frontend.resolve import ResolvedQuery
from toaster.schema import NULL_FLAG, QueryResult, ResultColumn
from toaster.runtime.nulls import NULL_DATE
from toaster.types import BOOL, FLOAT, INT, STRING, promote


@dataclass(frozen=True)
class CalcProgram:
    """The `calc` stage: relation declarations, query maps and result shapes."""
    relations: tuple     # tuple[RelationDecl]
    maps: tuple          # tuple[MapDecl] (role 'query')
    queries: tuple       # tuple[QueryResult]

    def __str__(self) -> str:
        """The program's canonical text (what --dump-ir calc prints)."""
        from toaster.calculus.printer import print_calc_program
        return print_calc_program(self)


def column_var(ref: A.ColumnRef) -> Var:
    return Var(f"{ref.source}_{ref.name}", ref.type)


def flag_var(ref: A.ColumnRef) -> Var:
    """The null flag (1 = NULL) of a nullable column: the variable of its physical flag column."""
    return Var(f"{ref.source}_{ref.name}{NULL_FLAG}", INT)


def null_default(t) -> Const:
    """The value a NULL holds (toaster.schema.Column): every NULL of a type is the same key."""
    from toaster.types import DATE
    return Const(NULL_DATE if t == DATE else "" if t == STRING else 0.0 if t == FLOAT else 0, t)


def _unsupported(what: str, node=None):
    pos = getattr(node, "pos", None)
    return UnsupportedError(what, line=getattr(pos, "line", None) or None,
                            column=getattr(pos, "column", None) or None)


def _is_select(q) -> bool:
    return isinstance(q, A.Select)


class Translator:
    def __init__(self, relations, functions=()):
        self.relations = {r.name: r for r in relations}
        self.functions = {f.name: f for f in functions}
        self.counter = 0
        self._enclosing: list[frozenset] = []   # FROM relations of the queries being translated
        self._var_source: dict = {}             # column variable -> the FROM factor binding it
        self.row_checks: list = []              # (violation count expr, message) per lookup subquery
        self.flags: dict = {}                   # output/group variable -> its null flag variable

    def fresh(self, stem: str, t) -> Var:
        self.counter += 1
        return Var(f"__{stem}{self.counter}", t)

    # ------------------------------------------------------------- values
    def term(self, e, aggs: dict | None = None) -> tuple[list, object]:
        """(factors that must precede it, value term). `aggs` maps aggregate calls and group
        expressions to the variables (or terms) that hold their values."""
        if aggs is not None and e in aggs:
            return [], aggs[e]
        const = folded(e)
        if const is not None:        # exact, rounded once (toaster.frontend.constants)
            return [], Const(*const)
        match e:
            case A.Literal(v, t):
                return [], Const(v, t)
            case A.ColumnRef():
                return [], column_var(e)
            case A.BinaryOp(op, l, r, _, t):
                fl, tl = self.term(l, aggs)
                fr, tr = self.term(r, aggs)
                return fl + fr, Arith(op, (tl, tr), t)
            case A.Negate(a, _, t):
                f, ta = self.term(a, aggs)
                return f, Arith("neg", (ta,), t)
            case A.AggCall():
                raise _unsupported("an aggregate in this position", e)
            case A.FuncCall("coalesce", args, _, t):
                z = self.fresh("coalesce", t)
                return [self.coalesce_branches(z, args, aggs)], z
            case A.FuncCall("nullif", args, _, t):
                return self.term(args[0], aggs)     # NULL where equal: null_guards
            case A.FuncCall(name, args, _, t):
                nullable_subqueries(e, aggs)        # refuses a NULL argument
                pre, terms = [], []
                for a in args:
                    f, ta = self.term(a, aggs)
                    pre += f
                    terms.append(ta)
                decl = self.functions.get(name)
                fname = decl.external.lower() if decl is not None else name
                if name == "cast_string" and args and args[0].type is not None and str(args[0].type) == "date":
                    terms.append(Const("date", STRING))
                return pre, Func(fname, tuple(terms), t)
            case A.Case(whens, else_, _, t):
                nullable_subqueries(e, aggs)        # refuses a NULL value
                z = self.fresh("case", t)
                return [self.case_branches(z, whens, else_, aggs, e)], z
            case A.ScalarSubquery(q, _, t):
                calc = self.scalar(q, e)
                z = self.fresh("sub", t if t is not None else expr_type(calc))
                return [Lift(z, calc)], z
        raise _unsupported(f"expression {type(e).__name__}", e)

    def value(self, e, aggs=None):
        """e as a calculus factor; a product is split into one factor per operand so that
        decomposition can place each factor with the relation it reads."""
        if isinstance(e, A.BinaryOp) and (aggs is None or e not in aggs) and folded(e) is None:
            # polynomial expansion of values (VLDBJ'14 §6.2): a sum of values is a sum of
            # factors, so each part can be materialized with the relation it reads
            if e.op == "*":
                return mk_prod([self.value(e.left, aggs), self.value(e.right, aggs)])
            if e.op == "+":
                return mk_sum([self.value(e.left, aggs), self.value(e.right, aggs)])
            if e.op == "-":
                return mk_sum([self.value(e.left, aggs), neg(self.value(e.right, aggs))])
        if folded(e) == (1, INT):
            return ONE
        pre, t = self.term(e, aggs)
        return mk_prod(pre + [Value(t)])

    def case_branches(self, z: Var, whens, else_, aggs, node):
        """CASE as a sum of branches, each binding z under its condition (and the failure of
        the earlier ones): no aggregation, so values of any type and incremental deltas."""
        branches, none_before = [], []
        for cond, val in whens:
            c = self.cond(cond, aggs)
            pre, t = self.term(val, aggs)
            branches.append(mk_prod(none_before + [c] + pre + [Lift(z, Value(t))]))
            none_before = none_before + [mk_sum([ONE, neg(c)])]
        if else_ is not None:
            pre, t = self.term(else_, aggs)
        elif z.type.is_numeric:
            pre, t = [], Const(0.0 if z.type == FLOAT else 0, z.type)
        else:
            raise _unsupported(f"CASE without ELSE with {z.type} results", node)
        branches.append(mk_prod(none_before + pre + [Lift(z, Value(t))]))
        return mk_sum(branches)

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

    # --------------------------------------------------------- conditions
    def cond(self, c, aggs=None, negate: bool = False):
        """A 0/1-valued calculus expression without output variables: 1 where c is true (with
        negate: where c is false). SQL's three-valued logic: a comparison with a NULL (an empty
        scalar subquery, toaster.frontend.nulls) is neither true nor false, so both are guarded."""
        if negate and not condition_is_nullable(c, aggs):
            return mk_sum([ONE, neg(self.cond(c, aggs))])
        match c:
            case None:
                return ONE
            case A.Comparison(op, l, r):
                guards = self.null_guards(l, aggs) + self.null_guards(r, aggs)
                fl, tl = self.term(l, aggs)
                fr, tr = self.term(r, aggs)
                test = Cmp(op, tl, tr)
                return mk_prod(guards + fl + fr + [mk_sum([ONE, neg(test)]) if negate else test])
            case A.And(args) if negate:
                return _any([self.cond(a, aggs, True) for a in args], self.fresh)
            case A.Or(args) if negate:
                return mk_prod([self.cond(a, aggs, True) for a in args])
            case A.NotCond(a):
                return self.cond(a, aggs, not negate)
            case A.InQuery(e) | A.Quantified(expr=e) | A.Like(e) if condition_is_nullable(c, aggs):
                test = self.predicate(c, aggs)
                guards = self.null_guards(e, aggs)
                out = mk_prod(guards + [mk_sum([ONE, neg(test)]) if negate else test])
                # over an empty subquery NULL IN / op SOME is false and op ALL is true, not unknown
                empty_true = c.negated if isinstance(c, A.InQuery) else \
                    isinstance(c, A.Quantified) and c.quantifier == "ALL"
                if not isinstance(c, A.Like) and negate != empty_true:
                    _, rows = self.rows(c.query)
                    out = mk_sum([out, mk_prod([mk_sum([ONE, neg(mk_prod(guards))]),
                                                self._count_test(AggSum((), rows), True)])])
                return out
            case A.And(args):
                return mk_prod([self.cond(a, aggs) for a in args])
            case A.Or(args) if _mutually_exclusive(args):
                # e.g. an IN list: at most one disjunct holds, so OR is their sum (no
                # inclusion-exclusion terms, which grow exponentially)
                return mk_sum([self.cond(a, aggs) for a in args])
            case A.Or(args):
                return _any([self.cond(a, aggs) for a in args], self.fresh)
            case A.BoolConst(v):
                return ONE if v else ZERO
            case A.IsNull(e, negated):
                present = mk_prod(self.null_guards(e, aggs))     # 1 iff e is not NULL
                return present if negated != negate else mk_sum([ONE, neg(present)])
        return self.predicate(c, aggs)

    def predicate(self, c, aggs):
        """LIKE, EXISTS, IN (subquery), ALL / SOME: 0/1, as if their operand were not NULL."""
        match c:
            case A.Like(e, pattern, negated):
                f, t = self.term(e, aggs)
                test = Cmp("=", Func("like", (t, Const(pattern, STRING)), INT), Const(1, INT))
                return mk_prod(f + [Cmp("!=" if negated else "=", test.left, test.right)])
            case A.Exists(q, negated):
                if _is_select(q) and not _is_aggregate(q) and q.limit is None:    # its columns do not matter
                    return self._count_test(AggSum((), mk_prod(self.body(q))), negated)
                outs, rows = self.rows(q)
                return self._count_test(AggSum((), rows), negated)
            case A.InQuery(e, q, negated):
                f, t = self.term(e, aggs)
                outs, rows = self.rows(q)
                if len(outs) != 1:
                    raise _unsupported("IN over a subquery with several columns", c)
                return mk_prod(f + [self._count_test(AggSum((), mk_prod([rows, Cmp("=", outs[0], t)])), negated)])
            case A.Quantified(op, e, quant, q):
                f, t = self.term(e, aggs)
                outs, rows = self.rows(q)
                if len(outs) != 1:
                    raise _unsupported(f"{quant} over a subquery with several columns", c)
                match_ = Cmp(op, t, outs[0])
                if quant == "ALL":
                    failing = AggSum((), mk_prod([rows, mk_sum([ONE, neg(match_)])]))
                    return mk_prod(f + [self._count_test(failing, True)])
                return mk_prod(f + [self._count_test(AggSum((), mk_prod([rows, match_])), False)])
        raise _unsupported(f"condition {type(c).__name__}", c)

    def null_guards(self, e, aggs=None) -> list:
        """Factors that are 1 iff the value e is not NULL: for each scalar subquery that can be
        empty (toaster.frontend.nulls), a lifted count of its rows that must be nonzero."""
        out = []
        for sub in nullable_subqueries(e, aggs):
            if isinstance(sub, A.ColumnRef):
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

    def _count_test(self, count_expr, zero: bool):
        z = self.fresh("cnt", INT)
        return mk_prod([Lift(z, count_expr), Cmp("=" if zero else "!=", z, Const(0, INT))])

    # --------------------------------------------------------------- FROM
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
            return _rename_outputs(rows, outs, want), \
                [(v, Var(f"{v.name}{NULL_FLAG}", INT), False) for v in want]
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

    def body(self, sel: A.Select) -> list:
        factors = []
        # outer joins last: their NOT EXISTS reads the preserved items' columns
        items = [it for it in sel.from_items if not isinstance(it, A.OuterJoinItem)] + \
            [it for it in sel.from_items if isinstance(it, A.OuterJoinItem)]
        for item in items:
            if isinstance(item, A.OuterJoinItem):
                factors.append(self.outer_join(item))
            else:
                factors.append(self.item_rows(item)[0])
            for v in schema(factors[-1])[1]:
                self._var_source.setdefault(v, factors[-1])
        # the relations a row of this query comes from: a subquery counting an unfiltered subset
        # of them is never empty where this query has a row, so its NULL guard is left out
        self._enclosing.append(([f for f in factors if isinstance(f, Rel)], _column_equalities(sel.where)))
        try:
            c = self.cond(sel.where)
        finally:
            self._enclosing.pop()
        if c != ONE:
            factors.append(c)
        return factors

    # --------------------------------------------------------------- rows
    def rows(self, q) -> tuple[tuple, object]:
        """(output variables, expression whose value is each output row's multiplicity)."""
        if isinstance(q, A.SetOp):
            return self.setop_rows(q)
        sel = q
        if _is_aggregate(sel):
            outs, expr = self.agg_rows(sel)
        else:
            base = self.body(sel)
            outs, lifts = self.target_vars([t.expr for t in sel.targets], None)
            expr = AggSum(tuple(outs), mk_prod(base + lifts))
        if sel.distinct:
            expr = _distinct(outs, expr, self)
        if sel.order_by or sel.limit is not None:
            if sel.limit is not None:
                raise _unsupported("LIMIT inside a subquery", sel)
        return tuple(outs), expr

    def target_vars(self, exprs, aggs, outputs: bool = True, nulls: bool = False) -> tuple[list, list]:
        """Output variables for exprs and the lifts defining them. An output that can be NULL is
        refused unless `nulls` (a top-level result): then its null flag variable is recorded in
        self.flags."""
        outs, lifts = [], []
        for e in exprs:
            sources = nullable_subqueries(e, aggs) if outputs else []
            if outputs and aggs is not None:
                self.refuse_null_aggregates(e, aggs)
            if sources and not nulls:
                raise refuse_null("a NULL (a nullable column or a scalar subquery that can be empty) in a "
                                  "FROM-subquery or set-operation column", e)
            if isinstance(e, A.ColumnRef) and column_var(e) not in outs and aggs is None:
                outs.append(column_var(e))
                if sources:
                    self.flags[outs[-1]] = flag_var(e)
                continue
            if sources:
                v, f, defs = self.nullable_value(e, aggs)
                lifts += defs
                self.flags[v] = f
                outs.append(v)
                continue
            pre, t = self.term(e, aggs)
            v = self.fresh("t", t.type)
            lifts += pre + [Lift(v, Value(t))]
            outs.append(v)
        return outs, lifts

    def nullable_value(self, e, aggs=None) -> tuple:
        """(v, f, factors): v is e's value and f its null flag; where e is NULL, v is the
        type's NULL value, so all NULLs are one key."""
        if isinstance(e, A.ColumnRef) and (aggs is None or e not in aggs):
            return column_var(e), flag_var(e), []
        pre, t = self.term(e, aggs)
        v, f = self.fresh("t", t.type), self.fresh("null", INT)
        present = mk_prod(self.null_guards(e, aggs))
        value = mk_prod([present] + pre + [Lift(v, Value(t)), Lift(f, Value(Const(0, INT)))])
        null = mk_prod([mk_sum([ONE, neg(present)]), Lift(v, Value(null_default(t.type))),
                        Lift(f, Value(Const(1, INT)))])
        return v, f, [mk_sum([value, null])]

    def refuse_null_aggregates(self, e, aggs):
        """A SUM/AVG/MIN/MAX over only NULLs is NULL: not supported yet in a FROM-subquery column."""
        for call in _agg_calls([e]):
            if call.func in ("SUM", "AVG", "MIN", "MAX") and any(nullable_subqueries(a) for a in call.args):
                raise refuse_null(f"{call.func} of a nullable column in a FROM-subquery column", call)

    def group_keys(self, sel: A.Select) -> tuple[list, list, dict]:
        """Group variables, the lifts that define expression keys, and expr -> var."""
        gvars, lifts, by_expr = [], [], {}
        for g in sel.group_by:
            f = None
            if nullable_subqueries(g):      # NULL is one group: the value and its flag are keys
                v, f, defs = self.nullable_value(g)
                lifts += defs
                self.flags[v] = f
            elif isinstance(g, A.ColumnRef):
                v = column_var(g)
            else:
                pre, t = self.term(g)
                v = self.fresh("g", t.type)
                lifts += pre + [Lift(v, Value(t))]
            by_expr[g] = v
            for x in (v, f):
                if x is not None and x not in gvars:
                    gvars.append(x)
        return gvars, lifts, by_expr

    def agg_rows(self, sel: A.Select) -> tuple[list, object]:
        gvars, glifts, by_expr = self.group_keys(sel)
        base = mk_prod(self.body(sel) + glifts)
        factors = []
        if gvars:
            # each group once; the test matters once the group variables are bound from
            # outside (a join on them), where the lift would otherwise bind 0 for no group
            grp = self.fresh("grp", INT)
            factors += [Lift(grp, AggSum(tuple(gvars), base)), Cmp("!=", grp, Const(0, INT))]
        aggs: dict = dict(by_expr)
        for call in _agg_calls([t.expr for t in sel.targets] + [sel.having]):
            if call in aggs:
                continue
            calc = self.aggregate(call, base)
            v = self.fresh("agg", call.type if call.func != "AVG" else FLOAT)
            factors.append(Lift(v, calc))
            aggs[call] = v
        if sel.having is not None:
            factors.append(self.cond(sel.having, aggs))
        outs, lifts = self.target_vars([t.expr for t in sel.targets], aggs)
        return outs, AggSum(tuple(outs), mk_prod(factors + lifts))

    def aggregate(self, call: A.AggCall, base):
        """A scalar expression for the aggregate over `base` (group variables bound outside).
        Rows where an argument is NULL (an empty scalar subquery) are left out, as in SQL."""
        base = self.guarded(base, call.args)
        match call.func:
            case "SUM":
                return AggSum((), mk_prod([base, self.value(call.args[0])]))
            case "COUNT" if call.distinct:
                outs, lifts = self.target_vars(list(call.args), None, outputs=False)
                inner = AggSum(tuple(outs), mk_prod([base] + lifts))
                d = self.fresh("d", INT)
                return AggSum((), mk_prod([Lift(d, inner), Cmp("!=", d, Const(0, INT))]))
            case "COUNT":
                return AggSum((), base)
            case "AVG":
                total = AggSum((), mk_prod([base, self.value(call.args[0])]))
                s = self.fresh("s", expr_type(total))   # typed as its sum, so the IR reparses
                n = self.fresh("n", INT)
                return AggSum((), mk_prod([
                    Lift(s, total),
                    Lift(n, AggSum((), base)),
                    Value(Arith("/", (s, Func("listmax", (Const(1, INT), n), INT)), FLOAT))]))
            case "MIN" | "MAX":
                pre, t = self.term(call.args[0])
                return Extremum(call.func.lower(), (), t, mk_prod([base] + pre))
        raise _unsupported(f"aggregate {call.func}", call)

    def guarded(self, base, args):
        """base restricted to the rows where no argument is NULL."""
        guards = [g for a in args for g in self.null_guards(a)]
        return mk_prod([base] + guards) if guards else base

    def scalar(self, q, node=None):
        """A scalar subquery: one aggregate value (0 over no rows), or a lookup's value."""
        if _is_select(q) and not _is_aggregate(q) and len(q.targets) == 1:
            return self.lookup(q, node if node is not None else q)
        if not _is_select(q) or not _is_aggregate(q) or q.group_by or len(q.targets) != 1:
            raise _unsupported("a scalar subquery that is not a single ungrouped aggregate", q)
        base = mk_prod(self.body(q))
        target = q.targets[0].expr
        if isinstance(target, A.AggCall):
            return self.aggregate(target, base)
        aggs, lifts = {}, []
        for call in _agg_calls([target]):
            if call not in aggs:
                v = self.fresh("agg", call.type if call.func != "AVG" else FLOAT)
                lifts.append(Lift(v, self.aggregate(call, base)))
                aggs[call] = v
        return AggSum((), mk_prod(lifts + [self.value(target, aggs)]))

    def lookup(self, q: A.Select, node):
        """A scalar subquery that is not an aggregate: the value of its one row (0 over no rows,
        where subquery_guard makes it NULL). Several rows are an error, as in DuckDB: a count of
        the enclosing rows whose subquery has more than one row is maintained beside the result
        and checked when the result is read (toaster.engine)."""
        target = q.targets[0].expr
        if q.distinct or q.order_by or q.limit is not None:
            raise _unsupported("DISTINCT, ORDER BY or LIMIT in a scalar subquery that is not an aggregate", q)
        if is_single_row(q):
            return self.value(target)
        base = self.body(q)
        self.single_row_check(AggSum((), mk_prod(base)), node)
        pre, t = self.term(target)
        if t.type.is_numeric:
            return AggSum((), mk_prod(base + pre + [Value(t)]))
        return Extremum("max", (), t, mk_prod(base + pre))     # the one row's value, of any type

    def single_row_check(self, count, node):
        """Record a query computing how many enclosing rows see more than one row of `count`'s
        subquery: its correlation variables are bound by the FROM factors that define them."""
        outer, free = [], set(schema(count)[0])
        while free:
            v = free.pop()
            f = self._var_source.get(v)
            if f is None:
                raise _unsupported("a scalar subquery that is not an aggregate, correlated here", node)
            if f not in outer:
                outer.append(f)
                free |= set(schema(f)[0])
            free -= set().union(*(schema(o)[1] for o in outer))
        c = self.fresh("rows", INT)
        check = AggSum((), mk_prod(outer + [Lift(c, count), Cmp(">", c, Const(1, INT))]))
        pos = getattr(node, "pos", None)
        where = f" at line {pos.line}, column {pos.column}" if pos is not None and getattr(pos, "line", None) else ""
        message = f"more than one row returned by the scalar subquery{where} (it can only return one row)"
        if not where or all(m != message for _, m in self.row_checks):
            self.row_checks.append((check, message))

    def setop_rows(self, q: A.SetOp):
        lo, le = self.rows(q.left)
        ro, re_ = self.rows(q.right)
        if len(lo) != len(ro):
            raise _unsupported(f"{q.op} of queries with different column counts", q)
        common = tuple(self.fresh("u", promote(a.type, b.type) if a.type.is_numeric and b.type.is_numeric
                                   else a.type) for a, b in zip(lo, ro))
        left = _rename_outputs(le, lo, common)
        right = _rename_outputs(re_, ro, common)
        if q.op == "UNION ALL":
            return common, AggSum(common, mk_sum([left, right]))
        if q.op == "UNION":
            return common, _distinct(common, AggSum(common, mk_sum([left, right])), self)
        c1, c2 = self.fresh("l", INT), self.fresh("r", INT)
        test = Cmp("!=" if q.op == "INTERSECT" else "=", c2, Const(0, INT))
        return common, AggSum(common, mk_prod([Lift(c1, AggSum(common, left)), Cmp("!=", c1, Const(0, INT)),
                                                Lift(c2, AggSum(common, right)), test]))


# ------------------------------------------------------------------ helpers

def _present(cols) -> list:
    """Null flags 0 for the columns of a row that is there (physical flags come with the row)."""
    return [Lift(f, Value(Const(0, INT))) for _, f, physical in cols if not physical]


def _padded(cols) -> list:
    """A row of NULLs: every value the type's NULL value, every flag 1."""
    return [x for v, f, _ in cols for x in (Lift(v, Value(null_default(v.type))), Lift(f, Value(Const(1, INT))))]


def _is_aggregate(sel: A.Select) -> bool:
    return bool(sel.group_by) or bool(_agg_calls([t.expr for t in sel.targets] + [sel.having]))


def _agg_calls(nodes) -> list:
    """AggCalls in expressions/conditions, outermost only (in order, without duplicates)."""
    out = []

    def walk(n):
        match n:
            case A.AggCall():
                if n not in out:
                    out.append(n)
            case A.BinaryOp(_, l, r) | A.Comparison(_, l, r):
                walk(l)
                walk(r)
            case A.Negate(a) | A.NotCond(a):
                walk(a)
            case A.And(args) | A.Or(args) | A.FuncCall(_, args):
                for a in args:
                    walk(a)
            case A.Case(whens, else_):
                for c, v in whens:
                    walk(c)
                    walk(v)
                walk(else_)
            case A.Like(e) | A.InQuery(e) | A.Quantified(_, e):
                walk(e)
    for n in nodes:
        walk(n)
    return out


def _equalities(c) -> dict:
    """{expression: constant} for the `expr = constant` conjuncts of a condition."""
    out = {}
    for x in (c.args if isinstance(c, A.And) else (c,)):
        if isinstance(x, A.Comparison) and x.op == "=":
            if isinstance(x.right, A.Literal) and not isinstance(x.left, A.Literal):
                out[x.left] = x.right.value
            elif isinstance(x.left, A.Literal) and not isinstance(x.right, A.Literal):
                out[x.right] = x.left.value
    return out


def _any(parts: list, fresh=None):
    """OR of 0/1 expressions without output variables. Two: a + b - a*b (inclusion-exclusion).
    More: the count of true disjuncts, lifted and tested nonzero -- linear in the number of
    disjuncts, where folding inclusion-exclusion doubles the expression at every step."""
    if len(parts) > 2 and fresh is not None:
        n = fresh("or", INT)
        # summed out under AggSum([]): a part's own lifts (NULL guards) are not outputs of the sum
        return mk_prod([Lift(n, AggSum((), mk_sum(parts))), Cmp("!=", n, Const(0, INT))])
    acc = parts[0]
    for b in parts[1:]:
        acc = mk_sum([acc, b, neg(mk_prod([acc, b]))])
    return acc


_MISSING = object()


def _mutually_exclusive(conds) -> bool:
    """Every two conditions require different constants for some common expression."""
    eqs = [_equalities(c) for c in conds]
    # the common case, an IN list or `x = 1 OR x = 2 OR ...`: one expression that every
    # condition pins to a different constant (linear; the pairwise check is quadratic)
    for k in (eqs[0] if eqs else ()):
        values = [e.get(k, _MISSING) for e in eqs]
        if _MISSING not in values and len(set(values)) == len(values):
            return True
    for i in range(len(eqs)):
        for j in range(i + 1, len(eqs)):
            if not any(k in eqs[j] and eqs[j][k] != v for k, v in eqs[i].items()):
                return False
    return True


def _distinct(outs, expr, tr: Translator):
    """Each row of expr once (the test keeps rows out when the outputs are bound outside)."""
    d = tr.fresh("dist", INT)
    return AggSum(tuple(outs), mk_prod([Lift(d, expr), Cmp("!=", d, Const(0, INT))]))


def _rename_outputs(expr, outs, want):
    """expr with output variables `outs` re-exposed as `want` (lifts, projected)."""
    if tuple(outs) == tuple(want):
        return expr
    return AggSum(tuple(want), mk_prod([expr] + [Lift(w, Value(o)) for o, w in zip(outs, want)]))


def output_names(q) -> list:
    """Output column names of a (resolved) query: alias, else column name, else generated."""
    if isinstance(q, A.SetOp):
        return output_names(q.left)
    names = []
    for i, t in enumerate(q.targets, start=1):
        if t.alias:
            names.append(t.alias)
        elif isinstance(t.expr, A.ColumnRef):
            names.append(t.expr.name)
        else:
            names.append(f"__COLUMN_{i}")
    return names
