"""Lowering M3 -> K3 (pass 'm3_to_k3').

A calculus expression evaluated with some variables already bound becomes a K3 bag of
tuples `(o1, .., ok, value)` over its output variables (in first-binding order). The
translation is deliberately uniform and naive; k3_fuse (named rewrites, toaster/k3/rewrites) cleans it up:
  Value(t)          {(t)}
  Cmp               filter(cond) over {(1)}
  MapRef/DeltaRel   {(lookup)} when every key is bound, else a Slice mapped to its outputs
  Prod(f1..fn)      left to right: flatten(map(\\(outs1, v1). map(\\(outs2, v2). (.., v1*v2), C2), C1))
                    where C2 is translated with outs1 bound (sideways binding)
  Sum               union of the terms, each projected to the same output order
  AggSum(gs, Q)     GroupByAggregate over Q (Aggregate when no group variable is unbound);
                    the statement's top-level AggSum is dropped (the update loop sums anyway)
  Lift(x, Q)        x bound to Q's aggregated value (0 for an empty scalar Q), or a filter
                    `value = x` when x is already bound
A statement `m[keys] += rhs` becomes `iterate(\\(outs, v). m[keys] += v, C)`.
"""
from __future__ import annotations

from toaster.recursion import deep
from toaster.calculus import ir as c
from toaster.m3.ir import M3Program, Statement
from toaster.errors import UnsupportedError
from toaster.calculus.maps import delta_map_name
from toaster.passes import pass_
from toaster.types import INT, FLOAT
from toaster.k3.ir import (
    Var, Const, BinOp, Call, Lookup, Tuple, Lambda, Apply, IfThenElse, Singleton, Union, Slice, Map,
    Filter, Flatten, Aggregate, GroupByAggregate, Iterate, Update, Replace, Clear, K3Map, K3Trigger,
    K3Program, CollType, TupleType, type_of, arith, compare, cast_to, maps_read,
)

ONE = Const(1, INT)
ZERO = Const(0, INT)


def trigger_name(event) -> str:
    return f"on_{event.kind}_{event.relation}"


def _kvar(v: c.Var) -> Var:
    return Var(v.name, v.type)


class _Lowering:
    def __init__(self, program: M3Program):
        self.program = program
        self.map_types = {m.name: (tuple(k.type for k in m.keys), m.type) for m in program.maps}
        for r in program.relations:
            self.map_types[delta_map_name(r.name)] = (r.types, INT)
        self.counter = 0
        self.temps: list[K3Map] = []

    def fresh(self, prefix: str, t) -> Var:
        self.counter += 1
        return Var(f"_{prefix}{self.counter}", t)

    # ---------------------------------------------------------------- terms
    def term(self, t, bound: set):
        match t:
            case c.Var():
                if t not in bound:
                    raise UnsupportedError(f"variable {t.name} is used before it is bound")
                return _kvar(t)
            case c.Const(v, ty):
                return Const(v, ty)
            case c.Arith(op, args, ty):
                xs = [self.term(a, bound) for a in args]
                if op == "neg":
                    return arith("-", cast_to(ZERO, type_of(xs[0])), xs[0])
                if op not in ("+", "-", "*", "/"):
                    raise UnsupportedError(f"arithmetic operator {op!r}")
                out = xs[0]
                for x in xs[1:]:
                    out = arith(op, out, x)
                return cast_to(out, ty) if ty in (INT, FLOAT) and type_of(out) != ty else out
            case c.Func(name, args, ty):
                return Call(name, tuple(self.term(a, bound) for a in args), ty)
        raise UnsupportedError(f"value term {t!r}")

    # ---------------------------------------------------------- expressions
    def coll(self, e, bound: set):
        """(K3 bag of (outs.., value), outs: tuple[c.Var]) for e with `bound` bound."""
        match e:
            case c.Value(t):
                return Singleton(Tuple((self.term(t, bound),))), ()
            case c.Cmp(op, a, b):
                v = self.fresh("v", INT)
                cond = compare(op, self.term(a, bound), self.term(b, bound))
                return Filter(Lambda((v,), cond), Singleton(Tuple((ONE,)))), ()
            case c.MapRef(name, vs, _):
                return self.map_access(name, vs, bound)
            case c.DeltaRel(name, vs):
                if self.program.mode != "batch":
                    raise UnsupportedError(f"delta relation {name} outside a batch trigger")
                return self.map_access(delta_map_name(name), vs, bound)
            case c.Rel(name, _):
                raise UnsupportedError(f"base relation {name} in an M3 statement (only maps can be read)")
            case c.Prod(fs):
                return self.prod(fs, bound)
            case c.Sum(ts):
                return self.sum(ts, bound)
            case c.AggSum(gs, q):
                return self.aggsum(gs, q, bound)
            case c.Lift(x, q):
                return self.lift(x, q, bound)
            case c.Extremum(kind, gs, t, q):
                return self.extremum(kind, gs, t, q, bound)
        raise UnsupportedError(f"calculus construct {type(e).__name__} in M3 statement")

    def extremum(self, kind: str, gs, t, q, bound: set):
        """MIN/MAX of t over the bindings of q with positive multiplicity, per group: sum the
        multiplicities per (group, value), keep the positive ones, fold min/max per group."""
        from toaster.types import DATE
        coll, qouts = self.coll(q, bound)
        group = tuple(g for g in gs if g not in bound)
        value = self.term(t, bound | set(qouts))
        xt = type_of(value)
        if xt not in (INT, DATE, FLOAT):
            raise UnsupportedError(f"nested {kind.upper()} over {xt} values")
        vt = _value_type(coll)
        m, acc = self.fresh("m", vt), self.fresh("acc", vt)
        fields = tuple(_kvar(o) for o in qouts) + (m,)
        keys = tuple(_kvar(g) for g in group)
        support = GroupByAggregate(Lambda(fields, Tuple(keys + (value,))),
                                   Lambda((acc,) + fields, arith("+", acc, m)), cast_to(ZERO, vt), coll)
        x, mult, best = self.fresh("x", xt), self.fresh("m", vt), self.fresh("best", xt)
        row = keys + (x, mult)
        positive = Filter(Lambda(row, compare(">", mult, cast_to(ZERO, vt))), support)
        # the first element of a group always replaces the start value
        start = float("inf") if xt == FLOAT else 2 ** 63 - 1
        start = Const(start if kind == "min" else -start, xt)
        better = compare("<" if kind == "min" else ">", x, best)
        folded = GroupByAggregate(Lambda(row, Tuple(keys)), Lambda((best,) + row, IfThenElse(better, x, best)),
                                  start, positive)
        return folded, group

    def map_access(self, name: str, vs: tuple, bound: set):
        key_types, vt = self.map_types[name]
        if len(key_types) != len(vs):
            raise UnsupportedError(f"map {name} used with {len(vs)} keys, declared with {len(key_types)}")
        if all(v in bound for v in vs):
            return Singleton(Tuple((Lookup(name, tuple(_kvar(v) for v in vs), vt),))), ()
        pattern, params, outs, dup_checks = [], [], [], []
        for v, kt in zip(vs, key_types):
            if v in bound:
                pattern.append(_kvar(v))
                params.append(self.fresh("k", kt))
            elif v in outs:
                p = self.fresh("k", kt)
                params.append(p)
                pattern.append(None)
                dup_checks.append(compare("=", p, _kvar(v)))
            else:
                pattern.append(None)
                params.append(_kvar(v))
                outs.append(v)
        val = self.fresh("v", vt)
        params = tuple(params) + (val,)
        src = Slice(name, tuple(pattern), key_types, vt)
        if dup_checks:
            cond = dup_checks[0]
            for d in dup_checks[1:]:
                cond = BinOp("and", cond, d, cond.type)
            src = Filter(Lambda(params, cond), src)
        return Map(Lambda(params, Tuple(tuple(_kvar(v) for v in outs) + (val,))), src), tuple(outs)

    def prod(self, fs, bound: set):
        if not fs:
            return Singleton(Tuple((ONE,))), ()
        fs = c.guards_first(fs, bound)      # a NULL string's cast is never evaluated
        acc, outs = self.coll(fs[0], bound)
        for f in fs[1:]:
            right, routs = self.coll(f, bound | set(outs))
            v1 = self.fresh("v", _value_type(acc))
            v2 = self.fresh("v", _value_type(right))
            ok = tuple(_kvar(o) for o in outs)
            rk = tuple(_kvar(o) for o in routs)
            inner = Map(Lambda(rk + (v2,), Tuple(ok + rk + (arith("*", v1, v2),))), right)
            acc = Flatten(Map(Lambda(ok + (v1,), inner), acc))
            outs = outs + routs
        return acc, outs

    def sum(self, ts, bound: set):
        parts, outs = [], None
        for t in ts:
            coll, touts = self.coll(t, bound)
            if outs is None:
                outs = touts
            elif set(touts) != set(outs):
                raise UnsupportedError("a sum whose terms bind different variables")
            parts.append((coll, touts))
        vt = FLOAT if any(_value_type(p) == FLOAT for p, _ in parts) else INT
        out_parts = []
        for coll, touts in parts:
            v = self.fresh("v", _value_type(coll))
            params = tuple(_kvar(o) for o in touts) + (v,)
            out_parts.append(Map(Lambda(params, Tuple(tuple(_kvar(o) for o in outs) + (cast_to(v, vt),))), coll))
        return (out_parts[0] if len(out_parts) == 1 else Union(tuple(out_parts))), outs

    def aggsum(self, gs, q, bound: set):
        coll, qouts = self.coll(q, bound)
        group = tuple(g for g in gs if g not in bound)
        missing = [g.name for g in group if g not in qouts]
        if missing:
            raise UnsupportedError(f"AggSum groups by {', '.join(missing)}, which its body does not bind")
        if not group:
            return Singleton(Tuple((self.scalar(coll, qouts),))), ()
        return self.group_by(coll, qouts, group), group

    def scalar(self, coll, outs):
        """Sum of a bag's values (0 when empty)."""
        vt = _value_type(coll)
        acc, v = self.fresh("acc", vt), self.fresh("v", vt)
        params = (acc,) + tuple(_kvar(o) for o in outs) + (v,)
        return Aggregate(Lambda(params, arith("+", acc, v)), cast_to(ZERO, vt), coll)

    def group_by(self, coll, outs, group):
        vt = _value_type(coll)
        v = self.fresh("v", vt)
        fields = tuple(_kvar(o) for o in outs) + (v,)
        acc = self.fresh("acc", vt)
        return GroupByAggregate(Lambda(fields, Tuple(tuple(_kvar(g) for g in group))),
                                Lambda((acc,) + fields, arith("+", acc, v)), cast_to(ZERO, vt), coll)

    def lift(self, x: c.Var, q, bound: set):
        if isinstance(q, c.Value):
            # a lifted scalar term (any type): bind or check it directly, nothing to sum
            t = self.term(q.term, bound)
            if x in bound:
                v = self.fresh("v", INT)
                return Filter(Lambda((v,), compare("=", t, _kvar(x))), Singleton(Tuple((ONE,)))), ()
            value = cast_to(t, x.type) if x.type in (INT, FLOAT) and type_of(t) != x.type else t
            return Singleton(Tuple((value, ONE))), (x,)
        coll, qouts = self.coll(q, bound)
        kx = _kvar(x)
        if qouts and not (isinstance(q, c.MapRef) and len(set(q.vars)) == len(q.vars)):
            coll = self.group_by(coll, qouts, qouts)   # a map slice has one row per key already
        elif not qouts:
            coll = Singleton(Tuple((self.scalar(coll, qouts),)))
        v = self.fresh("v", _value_type(coll))
        params = tuple(_kvar(o) for o in qouts) + (v,)
        keys = tuple(_kvar(o) for o in qouts)
        if x in bound or x in qouts:  # a check, not a binding
            checked = Filter(Lambda(params, compare("=", v, kx)), coll)
            return Map(Lambda(params, Tuple(keys + (ONE,))), checked), qouts
        value = cast_to(v, x.type) if x.type in (INT, FLOAT) else v
        return Map(Lambda(params, Tuple(keys + (value, ONE))), coll), qouts + (x,)

    # ----------------------------------------------------------- statements
    def statement(self, st: Statement, bound: set):
        rhs, hoisted = hoist_uncorrelated(st.rhs, bound)
        lets = []
        for x, q in hoisted:
            coll, _ = self.coll(q, bound)
            value = self.scalar(coll, ())
            lets.append((_kvar(x), cast_to(value, x.type) if x.type in (INT, FLOAT) else value))
            bound = bound | {x}
        stmts = self._statement(st, rhs, bound)
        if not lets:
            return stmts
        # the hoisted aggregates are let-bound around the statement that reads them, innermost
        # (computed first) outermost
        i = next(i for i, s in enumerate(stmts) if not isinstance(s, Clear))
        body = stmts[i]
        for var, value in reversed(lets):
            body = Apply(Lambda((var,), body), (value,))
        return stmts[:i] + [body] + stmts[i + 1:]

    def _statement(self, st: Statement, rhs, bound: set):
        key_types, vt = self.map_types[st.target]
        if st.op == "+=" and isinstance(rhs, c.AggSum):
            rhs = rhs.expr  # the update loop sums per key already
        coll, outs = self.coll(rhs, bound)
        avail = set(bound) | set(outs)
        for k in st.keys:
            if k not in avail:
                raise UnsupportedError(f"statement key {k.name} of {st.target} is not bound by its right-hand side")
        v = self.fresh("v", _value_type(coll))
        params = tuple(_kvar(o) for o in outs) + (v,)
        keys = tuple(_kvar(k) for k in st.keys)
        if st.op == "+=":
            if st.target not in maps_read(coll):
                return [Iterate(Lambda(params, Update(st.target, keys, cast_to(v, vt))), coll)]
            # the rhs reads the target: sum into a temp map first so every read sees the old state
            self.counter += 1
            tmp = f"TMP{self.counter}_{st.target}"
            self.temps.append(K3Map(tmp, key_types, vt, "temp"))
            kv = tuple(self.fresh("k", t) for t in key_types)
            tv = self.fresh("v", vt)
            copy = Iterate(Lambda(kv + (tv,), Update(st.target, kv, tv)),
                           Slice(tmp, (None,) * len(key_types), key_types, vt))
            return [Clear(tmp), Iterate(Lambda(params, Update(tmp, keys, cast_to(v, vt))), coll), copy]
        if st.op == ":=":
            return [Replace(st.target, Map(Lambda(params, Tuple(keys + (cast_to(v, vt),))), coll))]
        raise UnsupportedError(f"statement operator {st.op!r}")

    def program_(self) -> K3Program:
        p = self.program
        maps = [K3Map(m.name, tuple(k.type for k in m.keys), m.type, "view", m.role) for m in p.maps]
        triggers = []
        for trig in p.triggers:
            ev = trig.event
            if ev.kind == "batch":
                if p.mode != "batch":
                    raise UnsupportedError("batch trigger in a tuple-mode program")
                if not any(m.name == delta_map_name(ev.relation) for m in maps):
                    rel = next(r for r in p.relations if r.name == ev.relation)
                    maps.append(K3Map(delta_map_name(ev.relation), rel.types, INT, "delta"))
            elif ev.kind not in ("insert", "delete", "ready"):
                raise UnsupportedError(f"trigger event {ev.kind!r}")
            bound = set(ev.args)
            body = tuple(s for st in trig.statements for s in self.statement(st, bound))
            triggers.append(K3Trigger(trigger_name(ev), ev, tuple(_kvar(a) for a in ev.args), body))
        return K3Program(p.relations, tuple(maps) + tuple(self.temps), tuple(triggers), p.queries, p.mode)


def hoist_uncorrelated(rhs, bound: set):
    """(rhs without them, [(x, q)]): the scalar aggregates `x ^= q` of rhs that read only
    variables bound before the statement (trigger arguments, aggregates hoisted earlier), in
    the order they must be computed. Each is then computed once per trigger instead of once per
    row of the loops around it -- an uncorrelated subquery nested k deep would otherwise cost
    n^k. x is hoisted only where nothing else binds it (no map key, no group variable, the same
    q at every Lift of x)."""
    hoisted = []
    blocked = _non_lift_binders(rhs)
    while True:
        lifts: dict = {}
        _collect_lifts(rhs, lifts)
        avail = set(bound) | {x for x, _ in hoisted}
        pick = None
        for x, qs in lifts.items():           # post-order: inner aggregates come first
            if x in avail or x in blocked or len(qs) != 1:
                continue
            (q,) = qs
            if isinstance(q, c.Value):
                continue                      # a lifted scalar term costs nothing to keep
            ins, outs = c.schema(q, avail)
            # q must not read a variable bound around it (a correlation the schema of q alone
            # cannot see): every variable q shares with the rest of rhs is bound already
            rest = c.all_vars(_replace_lift(rhs, x))
            if not outs and ins <= avail and (c.all_vars(q) & rest) <= avail:
                pick = (x, q)
                break
        if pick is None:
            return rhs, hoisted
        hoisted.append(pick)
        rhs = _replace_lift(rhs, pick[0])


def _collect_lifts(e, out: dict) -> None:
    for child in _subexprs(e):
        _collect_lifts(child, out)
    if isinstance(e, c.Lift):
        out.setdefault(e.var, [])
        if e.expr not in out[e.var]:
            out[e.var].append(e.expr)


def _non_lift_binders(e) -> set:
    """Variables of e bound other than by a Lift (map and relation keys, group variables)."""
    match e:
        case c.Rel(_, vs) | c.DeltaRel(_, vs) | c.MapRef(_, vs, _):
            return set(vs)
        case c.AggSum(gs, q):
            return set(gs) | _non_lift_binders(q)
        case c.Extremum(_, gs, _, q):
            return set(gs) | _non_lift_binders(q)
    out = set()
    for child in _subexprs(e):
        out |= _non_lift_binders(child)
    return out


def _subexprs(e) -> tuple:
    match e:
        case c.Sum(ts) | c.Prod(ts):
            return tuple(ts)
        case c.AggSum(_, q) | c.Lift(_, q) | c.Extremum(_, _, _, q):
            return (q,)
    return ()


def _replace_lift(e, x):
    """e with every `x ^= q` replaced by 1 (x is bound before e is evaluated)."""
    match e:
        case c.Lift(v, _) if v == x:
            return c.Value(c.Const(1, INT))
        case c.Sum(ts):
            return c.Sum(tuple(_replace_lift(t, x) for t in ts))
        case c.Prod(fs):
            return c.Prod(tuple(_replace_lift(f, x) for f in fs))
        case c.AggSum(gs, q):
            return c.AggSum(gs, _replace_lift(q, x))
        case c.Lift(v, q):
            return c.Lift(v, _replace_lift(q, x))
        case c.Extremum(kind, gs, t, q):
            return c.Extremum(kind, gs, t, _replace_lift(q, x))
    return e


def _value_type(coll):
    t = type_of(coll)
    if not isinstance(t, CollType) or not isinstance(t.elem, TupleType):
        raise TypeError(f"expected a bag of tuples, got {t}")
    return t.elem.elems[-1]


@deep("the M3 program (m3_to_k3)")
def lower_m3(program: M3Program) -> K3Program:
    return _Lowering(program).program_()


@pass_("m3_to_k3", "m3", "k3")
def m3_to_k3(program: M3Program, options=None) -> K3Program:
    """Lower an M3 trigger program to K3 collection expressions."""
    return lower_m3(program)
