"""Top-level SELECTs -> query maps and result shapes (the piecewise materialization).

DBToaster-compatible simple results (every value a bare SUM or COUNT) are one map per value
column, named by the column. Anything else (AVG, MIN/MAX, COUNT(DISTINCT), expressions over
aggregates, HAVING, DISTINCT, ORDER BY/LIMIT) is materialized as incrementally maintainable
maps plus result terms that reconstitute the values when the result is read.
"""
from __future__ import annotations

from dataclasses import replace

from toaster.recursion import deep
from toaster.calculus.from_sql import (CalcProgram, Translator, _agg_calls, _is_aggregate,
                                      _unsupported)
from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, Func, Lift, Prod, Sum, Value, Var,
                                 expr_type, mk_prod)
from toaster.calculus.maps import MapDecl
from toaster.calculus.null_sql import null_default
from toaster.calculus.results import KLEENE_OR, NULL_UNLESS, GlobalValue, can_be_null, KeyRef, MapReduce, MapValue, TopValue
from toaster.frontend import ast as A
from toaster.frontend.constants import folded
from toaster.frontend.resolve import same_expr
from toaster.frontend.nulls import condition_is_nullable, is_nullable, nullable_outputs, nullable_subqueries, refuse_null
from toaster.schema import NULL_FLAG, QueryResult, ResultColumn
from toaster.types import FLOAT, INT


class _TopLevel:
    def __init__(self, tr: Translator, q):
        self.tr = tr
        self.q = q
        self.maps: list = []
        self.null_keys: list = []      # (key index, flag key index)
        self.key_flags: dict = {}      # key index -> its flag's key index

    def add_map(self, name: str, keys: tuple, body) -> MapDecl:
        for m in self.maps:
            if m.name == name:
                return m
        definition = AggSum(tuple(keys), body)
        m = MapDecl(name, tuple(keys), expr_type(definition), definition, "query")
        self.maps.append(m)
        return m

    # -------------------------------------------------------------- non-aggregate
    def rows_result(self) -> QueryResult:
        q, tr = self.q, self.tr
        sel = q.select
        if isinstance(sel, A.SetOp) and _limited_operands(sel):
            return self.setop_read_result()
        if isinstance(sel, A.SetOp):
            outs, rows = tr.rows(sel)
            body = rows
        else:
            base = tr.body(sel)
            outs, lifts = tr.target_vars([t.expr for t in sel.targets], None)
            body = mk_prod(base + lifts)
        (count_name, _), = q.value_columns
        outs = self.with_flags(outs)
        m = self.add_map(count_name, tuple(outs), body)
        keys = self.key_cols(outs)
        value = ResultColumn(count_name, INT)
        distinct = isinstance(sel, A.SetOp) and sel.op != "UNION ALL" or getattr(sel, "distinct", False)
        order, limit = self.order_terms(keyed=[e for _, e in q.key_columns])
        if not distinct and not order and limit is None:
            return QueryResult(q.name, keys, (value,), (m.name,), null_keys=tuple(self.null_keys))
        term = MapValue(m.name, INT)
        if distinct:
            term = Cmp("!=", term, Const(0, INT))
        return QueryResult(q.name, keys, (value,), (m.name,), order_by=order, value_terms=(term,),
                           group_map=m.name, limit=limit, null_keys=tuple(self.null_keys))

    def with_flags(self, keys) -> list:
        """The key variables followed by the null flags of the nullable ones (hidden key columns
        that make every NULL one key; toaster.engine shows None where a flag is 1)."""
        keys = list(keys)
        nk = len(self.q.key_columns)
        for i, v in enumerate(keys[:nk]):
            f = self.tr.flags.get(v)
            if f is not None:
                self.null_keys.append((i, len(keys)))
                self.key_flags[i] = len(keys)
                keys.append(f)
        return keys

    def setop_read_result(self) -> QueryResult:
        """A set operation with an ORDER BY ... LIMIT operand: one map per operand (each row's
        multiplicity), combined when the result is read, the limited ones cut to their top-n."""
        q = self.q
        key_types = [e.type for _, e in q.key_columns]
        (count_name, _), = q.value_columns
        nullable = nullable_outputs(q.select)      # NULL keys: a hidden flag key column each
        flagged = [i for i, null in enumerate(nullable) if null]
        self.null_keys = [(i, len(key_types) + j) for j, i in enumerate(flagged)]
        self.key_flags = dict(self.null_keys)
        term = self.operand_term(q.select, key_types, flagged)
        keys = tuple(ResultColumn(n, t) for (n, _), t in zip(q.key_columns, key_types))
        keys += tuple(ResultColumn(q.key_columns[i][0] + NULL_FLAG, INT) for i in flagged)
        order, limit = self.order_terms(keyed=[e for _, e in q.key_columns])
        return QueryResult(q.name, keys, (ResultColumn(count_name, INT),), tuple(m.name for m in self.maps),
                           value_terms=(term,), order_by=order, limit=limit, null_keys=tuple(self.null_keys))

    def operand_term(self, node, key_types, flagged):
        """A result term: the multiplicity of the row's key in the operand (or set operation) node
        (keys: the columns, then the null flags of the `flagged` ones)."""
        if isinstance(node, A.SetOp):
            a, b = self.operand_term(node.left, key_types, flagged), self.operand_term(node.right, key_types, flagged)
            # multiplicities are never negative when read, so listmin(1, m) says whether a row is there
            def has(t):
                return Func("listmin", (Const(1, INT), t), INT)
            match node.op:
                case "UNION ALL":
                    return Arith("+", (a, b), INT)
                case "UNION":
                    return has(Arith("+", (a, b), INT))
                case "INTERSECT":
                    return Arith("*", (has(a), has(b)), INT)
                case "EXCEPT":
                    return Arith("*", (has(a), Arith("-", (Const(1, INT), has(b)), INT)), INT)
            raise _unsupported(f"set operation {node.op}", node)
        tr = self.tr
        outs, rows = tr.rows(replace(node, order_by=(), limit=None))
        common = tuple(tr.fresh("u", t) for t in key_types)
        for i in flagged:
            tr.flags[common[i]] = tr.fresh("unull", INT)
        n = sum(1 for m in self.maps if m.name.startswith(f"{self.q.name}_OPERAND")) + 1
        keys = common + tuple(tr.flags[common[i]] for i in flagged)
        m = self.add_map(f"{self.q.name}_OPERAND{n}", keys, tr.renamed(rows, outs, common))
        if node.limit is None:
            return MapValue(m.name, INT)
        targets = [t.expr for t in node.targets]
        order = tuple((next(i for i, x in enumerate(targets) if same_expr(o.expr, x)), o.descending)
                      for o in node.order_by)
        # a nullable column sorts by its null flag too (the flags follow the values in the key)
        order = tuple((i, d) + ((len(common) + flagged.index(i),) if i in flagged else ())
                      for i, d in order)
        return TopValue(m.name, order, node.limit, INT)

    # ------------------------------------------------------------------ aggregate
    def agg_result(self) -> QueryResult:
        q, tr = self.q, self.tr
        sel = q.select
        gvars, glifts, by_expr = tr.group_keys(sel)
        keys, extra = [], []
        for name, e in q.key_columns:
            if e in by_expr:
                keys.append(by_expr[e])
            elif nullable_subqueries(e):
                v, f, defs = tr.nullable_value(e)
                tr.flags[v] = f
                extra += defs
                keys.append(v)
            else:
                pre, t = tr.term(e)
                v = tr.fresh("k", t.type)
                extra += pre + [Lift(v, Value(t))]
                keys.append(v)
        keys = tuple(self.with_flags(keys))
        base = mk_prod(tr.body(sel) + glifts + extra)
        values = [e for _, e in q.value_columns]
        simple = (all(isinstance(e, A.AggCall) and (e.func == "SUM" and not _null_arg(e)
                                                     or (e.func == "COUNT" and not e.distinct))
                      for e in values)
                  and sel.having is None and not sel.order_by and sel.limit is None and not sel.distinct)
        if simple:
            names = []
            for (name, e) in q.value_columns:
                rows = tr.guarded(base, e.args)
                body = mk_prod([rows, tr.value(e.args[0])]) if e.func == "SUM" else rows
                names.append(self.add_map(name, keys, body).name)
            cols = tuple(ResultColumn(n, self.maps[i].type) for i, (n, _) in enumerate(q.value_columns))
            return QueryResult(q.name, self.key_cols(keys), cols, tuple(names), null_keys=tuple(self.null_keys))
        terms: dict = {}
        for i, call in enumerate(_agg_calls(values + [sel.having] + [o.expr for o in sel.order_by])):
            bare = [n for n, e in q.value_columns if e == call]
            terms[call] = self.aggregate_term(call, bare[0] if bare else f"{q.name}_{call.func}{i + 1}",
                                              keys, base)
        key_exprs = [e for _, e in q.key_columns]
        value_terms = tuple(self.rterm(e, terms, key_exprs) for e in values)
        cols = tuple(ResultColumn(n, _rtype(t)) for (n, _), t in zip(q.value_columns, value_terms))
        having = self.rcond(sel.having, terms, key_exprs) if sel.having is not None else None
        group_map = self.add_map(f"{q.name}_GROUPS", keys, base).name if keys else None
        order, limit = self.order_terms(key_exprs, terms)
        read = tuple(m.name for m in self.maps)
        return QueryResult(q.name, self.key_cols(keys), cols, read, order_by=order,
                           value_terms=value_terms, group_map=group_map, having=having, limit=limit,
                           null_keys=tuple(self.null_keys))

    def key_cols(self, keys) -> tuple:
        names = [n for n, _ in self.q.key_columns]
        names += [names[i] + NULL_FLAG for i, _ in self.null_keys]
        return tuple(ResultColumn(n, v.type) for n, v in zip(names, keys))

    def aggregate_term(self, call: A.AggCall, name: str, keys: tuple, base):
        term = self._aggregate_term(call, name, keys, base)
        if call.func in ("SUM", "AVG", "MIN", "MAX") and _null_arg(call):
            # over only NULLs (rows with a NULL argument are left out) the aggregate is NULL
            present = self.add_map(f"{name}_NONNULL", keys, self.tr.guarded(base, call.args))
            return Func(NULL_UNLESS, (term, MapValue(present.name, INT)), _rtype(term))
        return term

    def _aggregate_term(self, call: A.AggCall, name: str, keys: tuple, base):
        tr = self.tr
        base = tr.guarded(base, call.args)     # rows with a NULL argument are left out
        match call.func:
            case "SUM":
                return MapValue(self.add_map(name, keys, mk_prod([base, tr.value(call.args[0])])).name,
                                _sum_type(call))
            case "COUNT" if call.distinct:
                outs, lifts = tr.target_vars(list(call.args), None, outputs=False)
                m = self.add_map(name, keys + tuple(outs), mk_prod([base] + lifts))
                return MapReduce("count", m.name, len(outs), INT)
            case "COUNT":
                return MapValue(self.add_map(name, keys, base).name, INT)
            case "AVG":
                s = self.add_map(f"{name}_SUM", keys, mk_prod([base, tr.value(call.args[0])]))
                n = self.add_map(f"{name}_COUNT", keys, base)
                # over no rows AVG is 0 (DIALECT.md §5), not 0/0
                count = Func("listmax", (Const(1, INT), MapValue(n.name, INT)), INT)
                return Arith("/", (MapValue(s.name, s.type), count), FLOAT)
            case "MIN" | "MAX":
                pre, t = tr.term(call.args[0])
                if isinstance(t, Var) and not pre and t not in keys:
                    v, lifts = t, []
                else:
                    v = tr.fresh("v", t.type)
                    lifts = pre + [Lift(v, Value(t))]
                m = self.add_map(name, keys + (v,), mk_prod([base] + lifts))
                return MapReduce(call.func.lower(), m.name, 1, t.type)
        raise _unsupported(f"aggregate {call.func}", call)

    # ------------------------------------------------------------- result terms
    def rterm(self, e, terms: dict, key_exprs: list, zero_ok: bool = True):
        """A result term for e. zero_ok: a NULL here would make the whole value NULL, which the
        oracle's comparison reads as 0 (a factor of a product), so an empty subquery's 0 may stand
        for it; elsewhere (a sum, a divisor, a function argument) it is refused."""
        if e in terms:
            return terms[e]
        if e in key_exprs:
            i = key_exprs.index(e)
            if i in self.key_flags:      # a NULL key makes the term NULL
                present = Arith("-", (Const(1, INT), KeyRef(self.key_flags[i], INT)), INT)
                return Func(NULL_UNLESS, (KeyRef(i, self.key_type(i)), present), self.key_type(i))
            return KeyRef(i, self.key_type(i))
        const = folded(e)
        if const is not None:
            return Const(*const)
        match e:
            case A.Literal(v, t):
                return Const(v, t)
            case A.NullLiteral(_, t):
                return Func(NULL_UNLESS, (null_default(t), Const(0, INT)), t)
            case A.BinaryOp(op, l, r, _, t):
                left_ok = zero_ok and op in "*/"
                right_ok = zero_ok and op == "*"
                return Arith(op, (self.rterm(l, terms, key_exprs, left_ok),
                                  self.rterm(r, terms, key_exprs, right_ok)), t)
            case A.Negate(a, _, t):
                return Arith("neg", (self.rterm(a, terms, key_exprs, zero_ok),), t)
            case A.ScalarSubquery(sub, _, t):
                if not zero_ok and is_nullable(sub):
                    raise refuse_null("a scalar subquery that can be empty in a sum, "
                                      "divisor or function argument of a result column", e)
                return self.global_subquery(sub, t, e)
            case A.FuncCall(name, args, _, t):
                decl = self.tr.functions.get(name)
                fname = decl.external.lower() if decl is not None else name
                return Func(fname, tuple(self.rterm(a, terms, key_exprs, False) for a in args), t)
        raise _unsupported(f"{type(e).__name__} over aggregates in a result", e)

    def global_subquery(self, sub, t, node):
        """An uncorrelated scalar subquery read by a result term: its own key-less map."""
        from toaster.calculus.ir import Extremum, schema
        calc = self.tr.scalar(sub)
        if schema(calc)[0]:
            raise _unsupported("a correlated subquery over aggregates in a result", node)
        if isinstance(calc, Extremum):
            z = self.tr.fresh("ext", calc.term.type)
            calc = AggSum((), mk_prod([Lift(z, calc), Value(z)]))
        n = sum(1 for m in self.maps if m.name.startswith(f"{self.q.name}_SUB")) + 1
        m = self.add_map(f"{self.q.name}_SUB{n}", (), calc)
        return GlobalValue(m.name, t)

    def subquery_guard(self, sub):
        """A result term that is 1 iff the uncorrelated scalar subquery has a value."""
        guard = mk_prod(self.tr.subquery_guard(sub))
        n = sum(1 for m in self.maps if m.name.startswith(f"{self.q.name}_HAS")) + 1
        return Cmp("!=", GlobalValue(self.add_map(f"{self.q.name}_HAS{n}", (), guard).name, INT), Const(0, INT))

    def key_type(self, i: int):
        e = self.q.key_columns[i][1]
        return e.type

    def rcond(self, c, terms, key_exprs, negate: bool = False):
        """1 where the HAVING condition c is true (negate: false); a comparison with an empty
        scalar subquery (NULL) is neither (three-valued logic, as in from_sql.cond)."""
        if negate and not condition_is_nullable(c, terms):
            return _not(self.rcond(c, terms, key_exprs))
        match c:
            case A.Comparison(op, l, r):
                test = Cmp(op, self.rterm(l, terms, key_exprs), self.rterm(r, terms, key_exprs))
                guards = tuple(self.subquery_guard(s) for x in (l, r) for s in nullable_subqueries(x, terms)
                               if isinstance(s, A.ScalarSubquery))
                # a NULL operand makes test NULL (unknown), and 1 - unknown is unknown
                return Prod(guards + (_not(test) if negate else test,)) if guards else test
            case A.And(args) if negate:
                return _or([self.rcond(a, terms, key_exprs, True) for a in args])
            case A.Or(args) if negate:
                return Prod(tuple(self.rcond(a, terms, key_exprs, True) for a in args))
            case A.And(args):
                return Prod(tuple(self.rcond(a, terms, key_exprs) for a in args))
            case A.Or(args):
                return _or([self.rcond(a, terms, key_exprs) for a in args])
            case A.NotCond(a):
                return self.rcond(a, terms, key_exprs, not negate)
            case A.BoolConst(v):
                return Value(Const(1 if v else 0, INT))
        raise _unsupported(f"{type(c).__name__} in HAVING", c)

    def order_terms(self, keyed, terms=None) -> tuple[tuple, int | None]:
        sel = self.q.select          # a Select, or a whole set operation (its items are key columns)
        order = tuple((self.rterm(o.expr, terms or {}, keyed), o.descending) for o in sel.order_by)
        return order, sel.limit


def _limited_operands(node) -> bool:
    if isinstance(node, A.SetOp):
        return _limited_operands(node.left) or _limited_operands(node.right)
    return node.limit is not None


def _not(t):
    return Sum((Value(Const(1, INT)), Prod((Value(Const(-1, INT)), t))))


def _or(parts: list):
    if any(can_be_null(p) for p in parts):      # unknown OR true is true: Kleene's OR
        return Func(KLEENE_OR, tuple(parts), INT)
    acc = parts[0]
    for b in parts[1:]:
        acc = Sum((acc, b, Prod((Value(Const(-1, INT)), acc, b))))
    return acc


def _null_arg(call) -> bool:
    return any(nullable_subqueries(a) for a in call.args)


def _sum_type(call):
    return FLOAT if call.args[0].type == FLOAT else INT


def _rtype(t):
    if isinstance(t, (Cmp, Prod, Sum)):
        return INT
    return t.type


@deep("the SQL query (sql_to_calc)")
def sql_to_calc(relations, queries, functions=()) -> CalcProgram:
    tr = Translator(relations, functions)
    maps, results = [], []
    for q in queries:
        top = _TopLevel(tr, q)
        sel = q.select
        first_check = len(tr.row_checks)
        if isinstance(sel, A.Select) and _is_aggregate(sel):
            r = top.agg_result()
        else:
            r = top.rows_result()
        checks = tuple((top.add_map(f"{q.name}_ROWS{i}", (), check).name, message)
                       for i, (check, message) in enumerate(tr.row_checks[first_check:], start=1))
        if checks:
            r = replace(r, checks=checks)
        maps.extend(top.maps)
        results.append(r)
    return CalcProgram(tuple(relations), tuple(maps), tuple(results))
