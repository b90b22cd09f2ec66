"""Lowering K3 -> imperative IR (pass 'k3_to_imp').

Collections are never built: each collection expression is compiled *push-style*, with a
consumer callback `emit(element, env)` that generates the code run once per element.
  Slice                ForEach over the map (bound positions = pattern, free = fresh key locals)
  Lookup               MapGet
  Map / Filter         bind the lambda's parameters (Declare, or reuse a simple value), If
  Flatten              the consumer of the outer bag compiles the inner bag
  Aggregate            Declare an accumulator, Assign it per element
  GroupByAggregate     MapClear + MapAdd into a 'temp' map, then ForEach over it
  Update / Replace     MapAdd / temp map + MapClear + copy
Locals get fresh names (unique per trigger), so every Declare introduces a new variable.
"""
from __future__ import annotations

from toaster.recursion import deep
from collections import defaultdict
from dataclasses import dataclass

from toaster.errors import UnsupportedError
from toaster.imperative import ir as imp
from toaster.imperative.ir import delta_map_name
from toaster.passes import pass_
from toaster.types import INT, FLOAT, BOOL, STRING, DATE, Type
from toaster.k3 import ir as k3
from toaster.k3.ir import type_of


@dataclass(frozen=True, slots=True)
class _Imp:
    """An already-compiled imperative expression standing in a K3 element (lowering only)."""
    expr: object


def imp_type(e) -> Type:
    match e:
        case imp.LocalRef(_, t) | imp.Lit(_, t) | imp.BinOp(_, _, _, t) | imp.Not(_, t) | imp.Cast(t, _) \
                | imp.Call(_, _, t) | imp.MapGet(_, _, t):
            return t
    raise TypeError(f"not an imperative expression: {e!r}")


def imp_cast(e, t: Type):
    have = imp_type(e)
    if have == t or not (t in (INT, FLOAT) and have in (INT, FLOAT, BOOL)):
        return e
    if isinstance(e, imp.Lit):
        return imp.Lit(float(e.value) if t == FLOAT else int(e.value), t)
    return imp.Cast(t, e)


_DEFAULTS = {INT: 0, FLOAT: 0.0, DATE: 0, STRING: "", BOOL: False}


class _Lowering:
    def __init__(self, program: k3.K3Program):
        self.program = program
        self.maps = {m.name: m for m in program.maps}
        self.temps: list[imp.MapSpec] = []
        self.indexes: dict[str, set] = defaultdict(set)
        self.counter = 0
        self.used: set[str] = set()

    # ---------------------------------------------------------------- names
    def fresh(self, base: str, t: Type) -> imp.LocalRef:
        base = base.strip("_") or "t"
        while True:
            self.counter += 1
            name = f"{base}_{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return imp.LocalRef(name, t)

    def temp_map(self, base: str, key_types: tuple, value_type: Type) -> str:
        self.counter += 1
        name = f"TMP{self.counter}_{base}"
        self.temps.append(imp.MapSpec(name, tuple(key_types), value_type, "temp"))
        return name

    # -------------------------------------------------------------- binding
    def bind(self, params, values, env) -> tuple[list, dict]:
        """Bind lambda parameters to compiled values (Declare unless the value is simple)."""
        if len(params) != len(values):
            raise UnsupportedError(f"K3 lambda of {len(params)} parameters applied to {len(values)} values")
        env = dict(env)
        decls = []
        for p, v in zip(params, values):
            if isinstance(p.type, Type):
                v = imp_cast(v, p.type)
            if isinstance(v, (imp.LocalRef, imp.Lit)):
                env[p.name] = v
            else:
                local = self.fresh(p.name, imp_type(v))
                decls.append(imp.Declare(local, v))
                env[p.name] = local
        return decls, env

    def fields(self, elem, env) -> tuple[list, list]:
        """Compile a tuple-valued element into (statements, field expressions)."""
        match elem:
            case k3.Tuple(es):
                stmts, out = [], []
                for x in es:
                    s, v = self.scalar(x, env)
                    stmts += s
                    out.append(v)
                return stmts, out
            case k3.Apply(fn, args):
                pre, vals = self.fields(k3.Tuple(args), env)
                decls, env2 = self.bind(fn.params, vals, env)
                s, out = self.fields(fn.body, env2)
                return pre + decls + s, out
            case k3.Project(k3.Tuple(es), i):
                return self.fields(es[i], env)
        raise UnsupportedError(f"K3 element {type(elem).__name__} in the imperative lowering")

    # --------------------------------------------------------------- scalars
    def scalar(self, e, env) -> tuple[list, object]:
        match e:
            case _Imp(x):
                return [], x
            case k3.Var(n, _):
                if n not in env:
                    raise UnsupportedError(f"K3 variable {n} is not bound")
                return [], env[n]
            case k3.Const(v, t):
                return [], imp.Lit(v, t)
            case k3.BinOp(op, a, b, t):
                sa, va = self.scalar(a, env)
                sb, vb = self.scalar(b, env)
                if op == "/":
                    va, vb, t = imp_cast(va, FLOAT), imp_cast(vb, FLOAT), FLOAT
                elif op in ("+", "-", "*"):
                    va, vb = imp_cast(va, t), imp_cast(vb, t)
                return sa + sb, imp.BinOp(op, va, vb, t)
            case k3.Not(a):
                s, v = self.scalar(a, env)
                return s, imp.Not(v)
            case k3.Cast(t, a):
                s, v = self.scalar(a, env)
                return s, imp_cast(v, t) if imp_type(v) != BOOL else imp.Cast(t, v)
            case k3.Call(n, args, t):
                s, vs = self.fields(k3.Tuple(args), env)
                return s, imp.Call(n, tuple(vs), t)
            case k3.Lookup(m, keys, t):
                s, ks = self.fields(k3.Tuple(keys), env)
                return s, imp.MapGet(m, tuple(ks), t)
            case k3.Project(k3.Tuple(es), i):
                return self.scalar(es[i], env)
            case k3.Apply(fn, args):
                pre, vals = self.fields(k3.Tuple(args), env)
                decls, env2 = self.bind(fn.params, vals, env)
                s, v = self.scalar(fn.body, env2)
                return pre + decls + s, v
            case k3.IfThenElse(c, a, b):
                sc, vc = self.scalar(c, env)
                t = type_of(e)
                out = self.fresh("ite", t)
                sa, va = self.scalar(a, env)
                sb, vb = self.scalar(b, env)
                return sc + [imp.Declare(out, imp.Lit(_DEFAULTS[t], t)),
                             imp.If(vc, tuple(sa + [imp.Assign(out, imp_cast(va, t))]),
                                    tuple(sb + [imp.Assign(out, imp_cast(vb, t))]))], out
            case k3.Aggregate(fn, init, c):
                t = type_of(fn.body)
                si, vi = self.scalar(init, env)
                acc = self.fresh("acc", t)

                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    decls, env2 = self.bind(fn.params[1:], fs, env)
                    env2[fn.params[0].name] = acc
                    sb, vb = self.scalar(fn.body, env2)
                    return pre + decls + sb + [imp.Assign(acc, imp_cast(vb, t))]

                return si + [imp.Declare(acc, imp_cast(vi, t))] + self.coll(c, env, step), acc
        raise UnsupportedError(f"K3 {type(e).__name__} in scalar position")

    # ----------------------------------------------------------- collections
    def coll(self, c, env, emit) -> list:
        match c:
            case k3.Empty():
                return []
            case k3.Singleton(x):
                return emit(x, env)
            case k3.Union(parts):
                return [s for p in parts for s in self.coll(p, env, emit)]
            case k3.IfThenElse(cnd, a, b):
                sc, vc = self.scalar(cnd, env)
                return sc + [imp.If(vc, tuple(self.coll(a, env, emit)), tuple(self.coll(b, env, emit)))]
            case k3.Apply(fn, args):
                pre, vals = self.fields(k3.Tuple(args), env)
                decls, env2 = self.bind(fn.params, vals, env)
                return pre + decls + self.coll(fn.body, env2, emit)
            case k3.Slice(m, pattern, key_types, vt):
                pre, pat, kvars, fields = [], [], [], []
                for p, kt in zip(pattern, key_types):
                    if p is None:
                        kv = self.fresh("k", kt)
                        pat.append(None)
                        kvars.append(kv)
                        fields.append(kv)
                    else:
                        s, v = self.scalar(p, env)
                        if not isinstance(v, (imp.LocalRef, imp.Lit)):
                            local = self.fresh("key", imp_type(v))
                            s = s + [imp.Declare(local, v)]
                            v = local
                        pre += s
                        pat.append(v)
                        kvars.append(None)
                        fields.append(v)
                bound = tuple(i for i, p in enumerate(pattern) if p is not None)
                if 0 < len(bound) < len(pattern):
                    self.indexes[m].add(bound)
                val = self.fresh("v", vt)
                body = emit(k3.Tuple(tuple(_Imp(f) for f in fields) + (_Imp(val),)), {})
                return pre + [imp.ForEach(m, tuple(pat), tuple(kvars), val, tuple(body))]
            case k3.Map(fn, src):
                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    decls, env2 = self.bind(fn.params, fs, env)
                    return pre + decls + emit(fn.body, env2)
                return self.coll(src, env, step)
            case k3.Filter(fn, src):
                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    decls, env2 = self.bind(fn.params, fs, env)
                    sc, vc = self.scalar(fn.body, env2)
                    kept = k3.Tuple(tuple(_Imp(f) for f in fs))
                    return pre + decls + sc + [imp.If(vc, tuple(emit(kept, {})))]
                return self.coll(src, env, step)
            case k3.Flatten(src):
                return self.coll(src, env, lambda inner, eenv: self.coll(inner, eenv, emit))
            case k3.GroupByAggregate(g, fn, init, src):
                addend = _additive(fn, init)
                if addend is None:
                    return self.fold_groups(g, fn, init, src, env, emit)
                key_types = type_of(g.body).elems
                vt = type_of(fn.body)
                tmp = self.temp_map("GROUP", key_types, vt)

                # the group key binds only the fields it reads: fn's parameters bind every field
                # again below (a field bound twice was computed twice: MST's per-broker
                # rix_interval reads, one of them into a dead local)
                used = k3.free_vars(g.body)

                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    kept = [(p, f) for p, f in zip(g.params, fs) if p.name in used]
                    dg, envg = self.bind(tuple(p for p, _ in kept), [f for _, f in kept], env)
                    sk, keys = self.fields(g.body, envg)
                    df, envf = self.bind(fn.params[1:], fs, env)
                    sa, va = self.scalar(addend, envf)
                    return pre + dg + sk + df + sa + [imp.MapAdd(tmp, tuple(keys), imp_cast(va, vt))]

                fill = [imp.MapClear(tmp)] + self.coll(src, env, step)
                kvars = tuple(self.fresh("g", t) for t in key_types)
                val = self.fresh("v", vt)
                body = emit(k3.Tuple(tuple(_Imp(k) for k in kvars) + (_Imp(val),)), {})
                return fill + [imp.ForEach(tmp, (None,) * len(kvars), kvars, val, tuple(body))]
        raise UnsupportedError(f"K3 {type(c).__name__} in collection position")

    def fold_groups(self, g, fn, init, src, env, emit) -> list:
        """A group-by with any fold (nested MIN/MAX): per element, acc = the group's value so
        far (init for a new group, told by a count map), then FOLD[keys] = fn(acc, element);
        the result is read per group of the count map (a fold may well be 0)."""
        key_types = type_of(g.body).elems
        vt = type_of(fn.body)
        folded = self.temp_map("FOLD", key_types, vt)
        seen = self.temp_map("SEEN", key_types, INT)

        def step(elem, eenv):
            pre, fs = self.fields(elem, eenv)
            dg, envg = self.bind(g.params, fs, env)
            sk, keys = self.fields(g.body, envg)
            si, vi = self.scalar(init, env)
            acc = self.fresh("acc", vt)
            keys = tuple(keys)
            so_far = [imp.Declare(acc, imp_cast(vi, vt)),
                      imp.If(imp.BinOp("!=", imp.MapGet(seen, keys, INT), imp.Lit(0, INT), BOOL),
                             (imp.Assign(acc, imp.MapGet(folded, keys, vt)),))]
            df, envf = self.bind(fn.params[1:], fs, env)
            envf[fn.params[0].name] = acc
            sb, vb = self.scalar(fn.body, envf)
            return (pre + dg + sk + si + so_far + df + sb
                    + [imp.MapSet(folded, keys, imp_cast(vb, vt)), imp.MapAdd(seen, keys, imp.Lit(1, INT))])

        fill = [imp.MapClear(folded), imp.MapClear(seen)] + self.coll(src, env, step)
        kvars = tuple(self.fresh("g", t) for t in key_types)
        count = self.fresh("n", INT)
        val = self.fresh("v", vt)
        body = [imp.Declare(val, imp.MapGet(folded, kvars, vt))] + \
            emit(k3.Tuple(tuple(_Imp(k) for k in kvars) + (_Imp(val),)), {})
        return fill + [imp.ForEach(seen, (None,) * len(kvars), kvars, count, tuple(body))]

    # ------------------------------------------------------------ statements
    def stmt(self, s, env) -> list:
        match s:
            case k3.Block(ss):
                return [x for st in ss for x in self.stmt(st, env)]
            case k3.Iterate(fn, src):
                written = _maps_written(fn.body)
                if written & k3.maps_read(src):
                    raise UnsupportedError(f"K3 iterate writes {sorted(written)} while reading it")

                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    decls, env2 = self.bind(fn.params, fs, env)
                    return pre + decls + self.stmt(fn.body, env2)
                return self.coll(src, env, step)
            case k3.Update(m, keys, v):
                sk, ks = self.fields(k3.Tuple(keys), env)
                sv, vv = self.scalar(v, env)
                return sk + sv + [imp.MapAdd(m, tuple(ks), imp_cast(vv, self.maps[m].value_type))]
            case k3.Replace(m, src):
                spec = self.maps[m]
                tmp = self.temp_map(m, spec.key_types, spec.value_type)

                def step(elem, eenv):
                    pre, fs = self.fields(elem, eenv)
                    return pre + [imp.MapAdd(tmp, tuple(fs[:-1]), imp_cast(fs[-1], spec.value_type))]

                fill = [imp.MapClear(tmp)] + self.coll(src, env, step)
                kvars = tuple(self.fresh("k", t) for t in spec.key_types)
                val = self.fresh("v", spec.value_type)
                copy = imp.ForEach(tmp, (None,) * len(kvars), kvars, val, (imp.MapAdd(m, kvars, val),))
                return fill + [imp.MapClear(m), copy]
            case k3.Clear(m):
                return [imp.MapClear(m)]
            case k3.Apply(fn, args):
                pre, vals = self.fields(k3.Tuple(args), env)
                decls, env2 = self.bind(fn.params, vals, env)
                return pre + decls + self.stmt(fn.body, env2)
            case k3.IfThenElse(c, a, b):
                sc, vc = self.scalar(c, env)
                return sc + [imp.If(vc, tuple(self.stmt(a, env)), tuple(self.stmt(b, env)))]
        raise UnsupportedError(f"K3 {type(s).__name__} in statement position")

    # --------------------------------------------------------------- program
    def program_(self) -> imp.ImpProgram:
        p = self.program
        triggers = []
        for t in p.triggers:
            self.used = {a.name for a in t.params}
            params = tuple(imp.LocalRef(a.name, a.type) for a in t.params)
            env = {a.name: r for a, r in zip(t.params, params)}
            body = [x for s in t.body for x in self.stmt(s, env)]
            triggers.append(imp.ImpTrigger(t.name, t.event, params, tuple(body)))
        specs = []
        for m in p.maps:
            idx = tuple(sorted(self.indexes.get(m.name, ()), key=lambda s: (len(s), s)))
            specs.append(imp.MapSpec(m.name, tuple(m.key_types), m.value_type, m.kind, idx))
        if p.mode == "batch":
            for t in p.triggers:
                name = delta_map_name(t.event.relation)
                if t.event.kind == "batch" and all(s.name != name for s in specs):
                    rel = next(r for r in p.relations if r.name == t.event.relation)
                    specs.append(imp.MapSpec(name, rel.types, INT, "delta"))
        return imp.ImpProgram(p.relations, tuple(specs) + tuple(self.temps), tuple(triggers), p.queries, p.mode)


def _additive(fn: k3.Lambda, init):
    """The addend x of a fold `\\(acc, ..). acc + x` with init 0 (what a temp map can sum), or
    None for any other fold."""
    acc = fn.params[0]
    body = fn.body
    if (isinstance(init, k3.Const) and init.value == 0 and isinstance(body, k3.BinOp) and body.op == "+"
            and body.left == acc and k3.count_uses(body.right, acc.name) == 0):
        return body.right
    return None


def _maps_written(s) -> set:
    match s:
        case k3.Update(m, _, _) | k3.Replace(m, _) | k3.Clear(m):
            return {m}
    out = set()
    for c in k3.children(s):
        out |= _maps_written(c)
    return out


@deep("the K3 program (k3_to_imp)")
def lower_k3(program: k3.K3Program) -> imp.ImpProgram:
    return _Lowering(program).program_()


@pass_("k3_to_imp", "k3", "imp")
def k3_to_imp(program: k3.K3Program, options=None) -> imp.ImpProgram:
    """Lower K3 collection programs to loops, conditionals and typed map operations."""
    return lower_k3(program)
