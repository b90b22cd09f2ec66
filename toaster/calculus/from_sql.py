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

from dataclasses import dataclass

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, Extremum, Func, Lift, Prod, Rel, Sum,
                                 Value, Var, expr_type, mk_prod, mk_sum, neg, schema, ONE, ZERO)
from toaster.calculus.maps import MapDecl
from toaster.calculus.results import KeyRef, MapReduce, MapValue
from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.constants import folded
from toaster.calculus.exclusive import mutually_exclusive
from toaster.calculus.implied import column_equalities as _column_equalities
from toaster.calculus.null_sql import NullTranslation, _outer_joins_last, flag_var, null_default
from toaster.calculus.sql_common import (_agg_calls, _any, _is_aggregate, _rename_outputs, _unsupported,  # noqa: F401
                                         column_var, output_names)
from toaster.frontend.nulls import (condition_is_nullable, is_single_row, null_capable, null_key,  # noqa: F401
                                    nullable_outputs, nullable_subqueries, refuse_null)
from toaster.frontend.resolve import ResolvedQuery
from toaster.schema import QueryResult, ResultColumn
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


def _is_select(q) -> bool:
    return isinstance(q, A.Select)


class Translator(NullTranslation):
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
            case A.NullLiteral(_, t):         # the type's NULL value; null_guards: never present
                return [], null_default(t)
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
            case A.InQuery(query=q) | A.Quantified(query=q) if any(nullable_outputs(q)):
                return self.membership_with_nulls(c, aggs, negate)
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
            case A.Or(args) if mutually_exclusive(args):
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
                self.refuse_nullable_column(outs[0], "IN", q)
                return mk_prod(f + [self._count_test(AggSum((), mk_prod([rows, Cmp("=", outs[0], t)])), negated)])
            case A.Quantified(op, e, quant, q):
                f, t = self.term(e, aggs)
                outs, rows = self.rows(q)
                if len(outs) != 1:
                    raise _unsupported(f"{quant} over a subquery with several columns", c)
                self.refuse_nullable_column(outs[0], quant, q)
                match_ = Cmp(op, t, outs[0])
                if quant == "ALL":
                    failing = AggSum((), mk_prod([rows, mk_sum([ONE, neg(match_)])]))
                    return mk_prod(f + [self._count_test(failing, True)])
                return mk_prod(f + [self._count_test(AggSum((), mk_prod([rows, match_])), False)])
        raise _unsupported(f"condition {type(c).__name__}", c)


    def _count_test(self, count_expr, zero: bool):
        z = self.fresh("cnt", INT)
        return mk_prod([Lift(z, count_expr), Cmp("=" if zero else "!=", z, Const(0, INT))])

    # --------------------------------------------------------------- FROM

    def body(self, sel: A.Select) -> list:
        factors = []
        for item in _outer_joins_last(sel.from_items):
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
        """(output variables, expression whose value is each output row's multiplicity). An
        output that can be NULL has its null flag in self.flags, and the expression binds it too
        (self.physical(outs) are its output variables)."""
        if isinstance(q, A.SetOp):
            return self.setop_rows(q)
        sel = q
        if _is_aggregate(sel):
            outs, expr = self.agg_rows(sel)
        else:
            base = self.body(sel)
            outs, lifts = self.target_vars([t.expr for t in sel.targets], None)
            expr = AggSum(self.physical(outs), mk_prod(base + lifts))
        if sel.distinct:
            expr = _distinct(self.physical(outs), expr, self)
        if sel.order_by or sel.limit is not None:
            if sel.limit is not None:
                raise _unsupported("LIMIT inside a subquery", sel)
        return tuple(outs), expr

    def target_vars(self, exprs, aggs, outputs: bool = True) -> tuple[list, list]:
        """Output variables for exprs and the lifts defining them. The null flag variable of an
        output that can be NULL is recorded in self.flags."""
        outs, lifts = [], []
        for e in exprs:
            sources = nullable_subqueries(e, aggs) if outputs else []
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
        for g, v in by_expr.items():       # a NULL group key: its flag (null_key, frontend.nulls)
            if v in self.flags:
                aggs[null_key(g)] = Cmp("=", self.flags[v], Const(0, INT))
        for call in _agg_calls([t.expr for t in sel.targets] + [sel.having]):
            if call in aggs:
                continue
            calc = self.aggregate(call, base)
            v = self.fresh("agg", call.type if call.func != "AVG" else FLOAT)
            factors.append(Lift(v, calc))
            aggs[call] = v
            if null_capable(call):        # NULL where no row of the group has a non-NULL argument
                n = self.fresh("nonnull", INT)
                factors.append(Lift(n, AggSum((), self.guarded(base, call.args))))
                aggs[null_key(call)] = Cmp("!=", n, Const(0, INT))
        if sel.having is not None:
            factors.append(self.cond(sel.having, aggs))
        outs, lifts = self.target_vars([t.expr for t in sel.targets], aggs)
        return outs, AggSum(self.physical(outs), mk_prod(factors + lifts))

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
        for a, b, u in zip(lo, ro, common):     # NULL on either side: a null flag (NULL matches NULL)
            if a in self.flags or b in self.flags:
                self.flags[u] = self.fresh("unull", INT)
        left = self.renamed(le, lo, common)
        right = self.renamed(re_, ro, common)
        keys = self.physical(common)
        if q.op == "UNION ALL":
            return common, AggSum(keys, mk_sum([left, right]))
        if q.op == "UNION":
            return common, _distinct(keys, AggSum(keys, mk_sum([left, right])), self)
        c1, c2 = self.fresh("l", INT), self.fresh("r", INT)
        test = Cmp("!=" if q.op == "INTERSECT" else "=", c2, Const(0, INT))
        return common, AggSum(keys, mk_prod([Lift(c1, AggSum(keys, left)), Cmp("!=", c1, Const(0, INT)),
                                              Lift(c2, AggSum(keys, right)), test]))


# ------------------------------------------------------------------ helpers


def _distinct(outs, expr, tr: Translator):
    """Each row of expr once (the test keeps rows out when the outputs are bound outside)."""
    d = tr.fresh("dist", INT)
    return AggSum(tuple(outs), mk_prod([Lift(d, expr), Cmp("!=", d, Const(0, INT))]))


