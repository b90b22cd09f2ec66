"""A direct Python interpreter of K3 (the specification of toaster.k3.ir's meaning).

Bags are Python lists, tuples are Python tuples, maps are dicts key-tuple -> number.
K3Engine runs a K3Program behind the common Engine interface (backend 'k3'); it exists so
tests can check m3_to_k3 and every k3 -> k3 pass against the M3 reference interpreter.
"""
from __future__ import annotations

from collections import defaultdict

from toaster.engine import TriggerEngine
from toaster.runtime.int64 import (INT64_MAX, INT64_MIN, ArithmeticOverflow, Journal, NoJournal, blame_maps,
                                    overflow_error, run_atomically)
from toaster.errors import UnsupportedError
from toaster.calculus.maps import delta_map_name
from toaster.functions import COMPARISONS, call, cast, compare, divide
from toaster.k3.ir import (
    Var, Const, BinOp, Not, Cast, Call, Lookup, Tuple, Project, Lambda, Apply, IfThenElse,
    Empty, Singleton, Union, Slice, Map, Filter, Flatten, Aggregate, GroupByAggregate,
    Iterate, Update, Replace, Clear, Block, K3Program,
)


def binop(op: str, a, b, t=None):
    """Shared scalar semantics of the K3 and imperative interpreters (toaster.functions:
    '/' is IEEE float division, comparisons and casts are the registry's). Integer `+ - *` are
    64-bit: a result outside the range raises ArithmeticOverflow (toaster/runtime/int64.py), as native code does."""
    match op:
        case "+":
            r = a + b
        case "-":
            r = a - b
        case "*":
            r = a * b
        case _:
            r = None
    if r is not None:
        if r.__class__ is int and (r > INT64_MAX or r < INT64_MIN):
            raise ArithmeticOverflow()
        return r
    match op:
        case "/":
            return divide(a, b)
        case "and":
            return bool(a) and bool(b)
        case "or":
            return bool(a) or bool(b)
    if op in COMPARISONS:
        return compare(op, a, b)
    raise UnsupportedError(f"operator {op!r}")


class K3Interpreter:
    queries, program = (), None     # to name the view in an overflow error

    def __init__(self, maps: dict, journal: Journal | None = None):
        self.maps = maps  # name -> dict
        self.journal = journal if journal is not None else NoJournal()

    def apply_fn(self, fn: Lambda, args, env):
        if len(fn.params) != len(args):
            raise TypeError(f"lambda of {len(fn.params)} params applied to {len(args)} values")
        inner = dict(env)
        for p, a in zip(fn.params, args):
            inner[p.name] = a
        return self.eval(fn.body, inner)

    def eval(self, e, env):
        match e:
            case Var(n, _):
                return env[n]
            case Const(v, _):
                return v
            case BinOp(op, a, b, t):
                return binop(op, self.eval(a, env), self.eval(b, env), t)
            case Not(a):
                return not self.eval(a, env)
            case Cast(t, a):
                return cast(self.eval(a, env), t)
            case Call(name, args, t):
                return call(name, [self.eval(a, env) for a in args], t, maps=self.maps)
            case Lookup(m, keys, _):
                return self.maps[m].get(tuple(self.eval(k, env) for k in keys), 0)
            case Tuple(es):
                return tuple(self.eval(x, env) for x in es)
            case Project(a, i):
                return self.eval(a, env)[i]
            case Apply(fn, args):
                return self.apply_fn(fn, [self.eval(a, env) for a in args], env)
            case IfThenElse(cnd, a, b):
                return self.eval(a, env) if self.eval(cnd, env) else self.eval(b, env)
            case Empty():
                return []
            case Singleton(x):
                return [self.eval(x, env)]
            case Union(parts):
                out = []
                for p in parts:
                    out.extend(self.eval(p, env))
                return out
            case Slice(m, pattern, _, _):
                pat = [(i, self.eval(p, env)) for i, p in enumerate(pattern) if p is not None]
                return [k + (v,) for k, v in list(self.maps[m].items())
                        if v != 0 and all(k[i] == x for i, x in pat)]
            case Map(fn, coll):
                return [self.apply_fn(fn, x, env) for x in self.eval(coll, env)]
            case Filter(fn, coll):
                return [x for x in self.eval(coll, env) if self.apply_fn(fn, x, env)]
            case Flatten(coll):
                return [y for x in self.eval(coll, env) for y in x]
            case Aggregate(fn, init, coll):
                acc = self.eval(init, env)
                for x in self.eval(coll, env):
                    acc = self.apply_fn(fn, (acc,) + tuple(x), env)
                return acc
            case GroupByAggregate(g, fn, init, coll):
                groups: dict = {}
                for x in self.eval(coll, env):
                    k = self.apply_fn(g, x, env)
                    acc = groups[k] if k in groups else self.eval(init, env)
                    groups[k] = self.apply_fn(fn, (acc,) + tuple(x), env)
                return [k + (v,) for k, v in groups.items()]
            # statements
            case Iterate(fn, coll):
                for x in self.eval(coll, env):
                    self.apply_fn(fn, x, env)
                return None
            case Update(m, keys, v):
                try:
                    k = tuple(self.eval(x, env) for x in keys)
                    target = self.maps[m]
                    new = binop("+", target.get(k, 0), self.eval(v, env))
                except ArithmeticOverflow:
                    raise overflow_error(m, self.queries, self.program) from None
                self.journal.write(target, k)
                target[k] = new
                return None
            case Replace(m, coll):
                fresh = defaultdict(int)
                try:
                    for x in self.eval(coll, env):
                        key = tuple(x[:-1])
                        fresh[key] = binop("+", fresh[key], x[-1])
                except ArithmeticOverflow:
                    raise overflow_error(m, self.queries, self.program) from None
                self.journal.clear(self.maps[m])
                self.maps[m].clear()
                self.maps[m].update(fresh)
                return None
            case Clear(m):
                self.journal.clear(self.maps[m])
                self.maps[m].clear()
                return None
            case Block(stmts):
                for s in stmts:
                    self.eval(s, env)
                return None
        raise TypeError(f"not a K3 expression: {e!r}")


class K3Engine(TriggerEngine):
    backend = "k3"

    def __init__(self, program: K3Program):
        super().__init__(program)
        self.maps = {m.name: {} for m in program.maps}
        self.journal = Journal()
        self.interp = K3Interpreter(self.maps, self.journal)
        self.interp.queries, self.interp.program = self.queries, program
        self._blame = {t.name: blame_maps(t.body, _k3_writes) for t in program.triggers}
        run_atomically(self.journal, self._start)

    def _apply(self, batch) -> None:
        run_atomically(self.journal, super()._apply, batch)

    def _run_tuple(self, trig, row: tuple) -> None:
        self._run(trig, {p.name: a for p, a in zip(trig.params, row)})

    def _run_batch(self, trig, relation: str, delta: dict) -> None:
        table = self.maps[delta_map_name(relation)]
        for k in delta:       # journaled: a rollback must leave the delta map empty again
            self.journal.write(table, k)
        table.update(delta)
        try:
            self._run(trig, {})
        finally:
            table.clear()

    def _run(self, trig, env: dict) -> None:
        for st, blame in zip(trig.body, self._blame[trig.name]):
            try:
                self.interp.eval(st, env)
            except ArithmeticOverflow:     # outside any map write: a local value of the trigger
                raise overflow_error(blame or trig.name, self.queries, self.program) from None

    def read_map(self, name: str) -> dict:
        return {k: v for k, v in self.maps[name].items() if v != 0}


def _k3_writes(e):
    """Maps a K3 statement updates or replaces, in order."""
    from dataclasses import fields, is_dataclass
    if isinstance(e, (Update, Replace)):
        yield e.map
    if is_dataclass(e):
        for f in fields(e):
            v = getattr(e, f.name)
            for x in (v if isinstance(v, tuple) else (v,)):
                if is_dataclass(x):
                    yield from _k3_writes(x)
