"""Single-node code of one statement block: M3 statements -> imperative IR statements.

The per-partition (and driver) code of a statement block is ordinary single-node trigger code
(Hot Dog §4.4). This is a direct, self-contained lowering of calculus to loops, written in
continuation-passing style over the calculus' sideways-binding order:
  MapRef / DeltaRel   lookup when every key is bound (skipped when 0), else a ForEach slice
  Value / Cmp         multiply / guard
  Prod                left to right, each factor inside the previous one's loops
  Sum                 each term with the same continuation (distributivity)
  AggSum(gs, Q)       inlined, Q's non-group output variables renamed apart (distributivity)
  Lift(x, Q)          Q summed into a local accumulator, x bound to it (0 when Q is empty)
                      or compared with it when x is already bound
It is kept behind `lower_statements` so the block code can later come from the shared
m3_to_k3 / k3_to_imp lowering instead.
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.m3.ir import Statement
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Call, MapGet, Declare, Assign, If, ForEach,
                                   MapAdd, MapClear, delta_map_name)
from toaster.types import INT, FLOAT, BOOL, promote


class _Lowerer:
    def __init__(self, value_types: dict):
        self.value_types = value_types   # map name -> value Type
        self.counter = 0

    def fresh(self, base: str, type_) -> LocalRef:
        self.counter += 1
        return LocalRef(f"{base.lower()}_{self.counter}", type_)

    # ------------------------------------------------------------- statements
    def statement(self, st: Statement) -> list:
        out = [MapClear(st.target)] if st.op == ":=" else []
        rhs = st.rhs
        while isinstance(rhs, C.AggSum):     # the update loop sums over the other variables anyway
            rhs = rhs.expr

        def emit(env, acc):
            try:
                keys = tuple(env[k] for k in st.keys)
            except KeyError as e:
                raise UnsupportedError(f"statement for {st.target}: key {e.args[0].name} is not bound by its rhs")
            return [MapAdd(st.target, keys, acc if acc is not None else Lit(1, INT))]

        return out + self.expr(rhs, {}, None, emit)

    # ------------------------------------------------------------ expressions
    def expr(self, e, env: dict, acc, k) -> list:
        match e:
            case C.MapRef(name, vs, _) | C.DeltaRel(name, vs):
                mname = delta_map_name(name) if isinstance(e, C.DeltaRel) else name
                return self.map_access(mname, vs, env, acc, k)
            case C.Value(t):
                if isinstance(t, C.Const) and t.value == 1:
                    return k(env, acc)
                return k(env, _mul(acc, self.term(t, env)))
            case C.Cmp(op, a, b):
                return [If(BinOp(op, self.term(a, env), self.term(b, env), BOOL), tuple(k(env, acc)))]
            case C.Prod(fs):
                return self.product(list(fs), env, acc, k)
            case C.Sum(ts):
                out = []
                for t in ts:
                    out += self.expr(t, env, acc, k)
                return out
            case C.AggSum(gs, q):
                return self.expr(self.rename_apart(q, gs, env), env, acc, k)
            case C.Lift(x, q):
                return self.lift(x, q, env, acc, k)
            case C.Rel(name, _):
                raise UnsupportedError(f"base relation {name} read inside a trigger statement")
        raise UnsupportedError(f"calculus construct {type(e).__name__} in trigger code")

    def product(self, fs: list, env, acc, k) -> list:
        if not fs:
            return k(env, acc)
        return self.expr(fs[0], env, acc, lambda env2, acc2: self.product(fs[1:], env2, acc2, k))

    def map_access(self, mname, vs, env, acc, k) -> list:
        vtype = self.value_types.get(mname, INT)
        if all(v in env for v in vs):
            val = self.fresh("v", vtype)
            return [Declare(val, MapGet(mname, tuple(env[v] for v in vs), vtype)),
                    If(BinOp("!=", val, Lit(0, INT), BOOL), tuple(k(env, _mul(acc, val))))]
        pattern, key_vars, checks, env2 = [], [], [], dict(env)
        for v in vs:
            if v in env2 and v not in env:      # repeated free variable: compare with its first binding
                kv = self.fresh(v.name, v.type)
                pattern.append(None)
                key_vars.append(kv)
                checks.append(BinOp("=", kv, env2[v], BOOL))
            elif v in env:
                pattern.append(env[v])
                key_vars.append(None)
            else:
                kv = self.fresh(v.name, v.type)
                pattern.append(None)
                key_vars.append(kv)
                env2[v] = kv
        val = self.fresh("v", vtype)
        body = k(env2, _mul(acc, val))
        for c in reversed(checks):
            body = [If(c, tuple(body))]
        return [ForEach(mname, tuple(pattern), tuple(key_vars), val, tuple(body))]

    def lift(self, x, q, env, acc, k) -> list:
        _, outs = C.schema(q, set(env))
        if outs:
            raise UnsupportedError("a nested aggregate with unaggregated output variables "
                                   f"({', '.join(sorted(v.name for v in outs))}) in the distributed backend")
        if isinstance(q, C.Value):         # x := one value (of any type, strings included): no sum
            val = self.term(q.term, env)
            if x in env:
                return [If(BinOp("=", env[x], val, BOOL), tuple(k(env, acc)))]
            xv = self.fresh(x.name, x.type)
            return [Declare(xv, val)] + k({**env, x: xv}, acc)
        total = self.fresh("agg", C.expr_type(q))
        out = [Declare(total, Lit(0, INT))]
        out += self.expr(q, env, None, lambda _env, a: [Assign(total, BinOp("+", total, a if a is not None else Lit(1, INT), total.type))])
        if x in env:
            return out + [If(BinOp("=", env[x], total, BOOL), tuple(k(env, acc)))]
        xv = self.fresh(x.name, x.type)
        return out + [Declare(xv, total)] + k({**env, x: xv}, acc)

    def rename_apart(self, q, gs, env):
        """Give q's output variables outside gs fresh names, so inlining the AggSum captures nothing."""
        _, outs = C.schema(q, set(env))
        ren = {}
        for v in sorted(outs - set(gs), key=lambda v: v.name):
            self.counter += 1
            ren[v] = C.Var(f"{v.name}__{self.counter}", v.type)
        return substitute(q, ren) if ren else q

    # ------------------------------------------------------------------ terms
    def term(self, t, env):
        match t:
            case C.Var():
                if t not in env:
                    raise UnsupportedError(f"variable {t.name} is used before it is bound")
                return env[t]
            case C.Const(v, ty):
                return Lit(v, ty)
            case C.Arith("neg", (a,), ty):
                return BinOp("-", Lit(0, INT), self.term(a, env), ty)
            case C.Arith("/", (a, b), _):
                return BinOp("/", self.term(a, env), self.term(b, env), FLOAT)
            case C.Arith(op, args, ty):
                out = self.term(args[0], env)
                for a in args[1:]:
                    out = BinOp(op, out, self.term(a, env), ty)
                return out
            case C.Func(name, args, ty):
                return Call(name, tuple(self.term(a, env) for a in args), ty)
        raise UnsupportedError(f"value term {t!r}")


def _mul(acc, v):
    if acc is None:
        return v
    return BinOp("*", acc, v, promote(acc.type, v.type))


def substitute(e, ren: dict):
    """Rename variables in a calculus expression (ren: Var -> Var)."""
    def t(x):
        match x:
            case C.Var():
                return ren.get(x, x)
            case C.Arith(op, args, ty):
                return C.Arith(op, tuple(t(a) for a in args), ty)
            case C.Func(n, args, ty):
                return C.Func(n, tuple(t(a) for a in args), ty)
        return x
    match e:
        case C.Rel(n, vs):
            return C.Rel(n, tuple(ren.get(v, v) for v in vs))
        case C.DeltaRel(n, vs):
            return C.DeltaRel(n, tuple(ren.get(v, v) for v in vs))
        case C.MapRef(n, vs, ty):
            return C.MapRef(n, tuple(ren.get(v, v) for v in vs), ty)
        case C.Value(x):
            return C.Value(t(x))
        case C.Cmp(op, a, b):
            return C.Cmp(op, t(a), t(b))
        case C.Lift(v, q):
            return C.Lift(ren.get(v, v), substitute(q, ren))
        case C.Sum(ts):
            return C.Sum(tuple(substitute(x, ren) for x in ts))
        case C.Prod(fs):
            return C.Prod(tuple(substitute(x, ren) for x in fs))
        case C.AggSum(gs, q):
            return C.AggSum(tuple(ren.get(v, v) for v in gs), substitute(q, ren))
    raise TypeError(f"not a calculus expression: {e!r}")


def lower_statements(statements, value_types: dict) -> tuple:
    """Imperative statements running `statements` in order (maps by name, value_types: name -> Type)."""
    lw = _Lowerer(value_types)
    out = []
    for st in statements:
        out += lw.statement(st)
    return tuple(out)
