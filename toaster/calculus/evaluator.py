"""The calculus evaluator: AGCA's formal semantics (VLDBJ'14 Fig. 1), executably.

An expression is evaluated under an environment binding its input variables; the result is a
generalized multiset relation over its output variables (a dict from binding tuples to ring
values, zeros dropped). Products pass bindings left to right, as in the paper's semantics.
This evaluator is the specification that every lower stage and backend must agree with.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from toaster.recursion import deep

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Extremum, Func, Lift, MapRef, Prod, Rel,
                                 Sum, Value, Var, all_vars, may_fail, schema)
from toaster.functions import COMPARISONS, call, cast, divide
from toaster.errors import UnsupportedError
from toaster.types import FLOAT, INT


@dataclass
class Database:
    """What an expression reads: base relations, materialized maps and current batch deltas.
    Each is {name: {tuple: value}}."""
    relations: dict = field(default_factory=dict)
    maps: dict = field(default_factory=dict)
    deltas: dict = field(default_factory=dict)


def eval_term(t, env: dict, maps: dict | None = None):
    """A scalar term's value; `maps` for the functions that read maps (range indexes)."""
    match t:
        case Var():
            try:
                return env[t]
            except KeyError:
                raise RuntimeError(f"unbound variable {t.name}") from None
        case Const(v, _):
            return v
        case Arith("neg", (a,), _):
            return -eval_term(a, env, maps)
        case Arith("+", args, ty):
            return _num(sum(eval_term(a, env, maps) for a in args), ty)
        case Arith("*", args, ty):
            v = 1
            for a in args:
                v = v * eval_term(a, env, maps)
            return _num(v, ty)
        case Arith("-", (a, b), ty):
            return _num(eval_term(a, env, maps) - eval_term(b, env, maps), ty)
        case Arith("/", (a, b), _):
            return divide(eval_term(a, env, maps), eval_term(b, env, maps))
        case Func(name, args, ty):
            v = call(name, [eval_term(a, env, maps) for a in args], maps=maps)
            return cast(v, ty)
    raise TypeError(f"not a term: {t!r}")


def _num(v, ty):
    return float(v) if ty == FLOAT else v


_CMP = COMPARISONS


def _match_atom(vs, table: dict, env: dict):
    for tup, val in table.items():
        if val == 0:
            continue
        new = {}
        ok = True
        for v, x in zip(vs, tup):
            if v in env:
                if env[v] != x:
                    ok = False
                    break
            elif v in new:
                if new[v] != x:
                    ok = False
                    break
            else:
                new[v] = x
        if ok:
            yield new, val


def _ev(e, db: Database, env: dict):
    """Yield (new bindings, value) pairs; the same binding may repeat (bag semantics)."""
    match e:
        case Rel(n, vs):
            yield from _match_atom(vs, db.relations.get(n, {}), env)
        case DeltaRel(n, vs):
            yield from _match_atom(vs, db.deltas.get(n, {}), env)
        case MapRef(n, vs, _):
            table = db.maps.get(n, {})
            if all(v in env for v in vs):  # a lookup, not a scan
                val = table.get(tuple(env[v] for v in vs), 0)
                if val != 0:
                    yield {}, val
            else:
                yield from _match_atom(vs, table, env)
        case Value(t):
            v = eval_term(t, env, db.maps)
            if v != 0:
                yield {}, v
        case Cmp(op, a, b):
            if _CMP[op](eval_term(a, env, db.maps), eval_term(b, env, db.maps)):
                yield {}, 1
        case Lift(x, Value(t)):
            # a lifted scalar term (any type, strings included): no aggregation involved
            val = eval_term(t, env, db.maps)
            if x in env:
                if env[x] == val:
                    yield {}, 1
            else:
                yield {x: val}, 1
        case Lift(x, q):
            _, outs = schema(q, set(env))
            groups = _group_memo(q, db, env, tuple(sorted(outs, key=lambda v: v.name)))
            if not outs and not groups:
                groups = {(): 0}
            names = tuple(sorted(outs, key=lambda v: v.name))
            for key, val in groups.items():
                b = dict(zip(names, key))
                if x in env:
                    if env[x] == val:
                        yield b, 1
                elif x in b:
                    if b[x] == val:
                        yield b, 1
                else:
                    b[x] = val
                    yield b, 1
        case Sum(ts):
            for t in ts:
                yield from _ev(t, db, env)
        case Prod(fs):
            yield from _prod(fs, 0, db, env, {}, 1)
        case AggSum(gs, q):
            outs = tuple(g for g in gs if g not in env)
            for key, val in _group_memo(q, db, env, outs).items():
                yield dict(zip(outs, key)), val
        case Extremum(kind, gs, t, q):
            outs = tuple(g for g in gs if g not in env)
            pick = min if kind == "min" else max
            best: dict = {}
            support: dict = {}
            for b, v in _ev(q, db, env):
                key = tuple(b[o] if o in b else env[o] for o in outs)
                x = eval_term(t, {**env, **b}, db.maps)
                support[(key, x)] = support.get((key, x), 0) + v
            for (key, x), m in support.items():
                if m > 0:
                    best[key] = x if key not in best else pick(best[key], x)
            for key, x in best.items():
                yield dict(zip(outs, key)), x
        case _:
            raise TypeError(f"not a calculus expression: {e!r}")


def _prod(fs, i, db, env, acc, val):
    if i == len(fs):
        yield acc, val
        return
    inner_env = {**env, **acc} if acc else env
    if may_fail(fs[i]) and not _later_filters_hold(fs, i, db, inner_env):
        return
    for b, v in _ev(fs[i], db, inner_env):
        yield from _prod(fs, i + 1, db, env, {**acc, **b} if b else acc, val * v)


def _later_filters_hold(fs, i, db, env) -> bool:
    """Whether every comparison after fs[i] whose variables env binds (and which cannot fail
    itself) holds: a cast that can fail is not evaluated where its NULL guard is false
    (toaster.calculus.ir.guards_first)."""
    for f in fs[i + 1:]:
        if isinstance(f, Cmp) and not may_fail(f) and all_vars(f) <= env.keys():
            if not _CMP[f.op](eval_term(f.left, env, db.maps), eval_term(f.right, env, db.maps)):
                return False
    return True


def _group(q, db, env, outs) -> dict:
    acc: dict = {}
    for b, v in _ev(q, db, env):
        key = tuple(b[o] if o in b else env[o] for o in outs)
        acc[key] = acc[key] + v if key in acc else v    # v: a MIN/MAX of strings too (one per key)
    return {k: v for k, v in acc.items() if v != 0}


# Aggregates are evaluated once per binding of the variables they read, not once per row of
# the enclosing product: an uncorrelated subquery is evaluated once per `evaluate` call, so
# nested subqueries cost linear rather than exponential time in their depth.
_memo = threading.local()


def _group_memo(q, db, env, outs) -> dict:
    groups, var_sets = _memo.groups, _memo.vars
    entry = var_sets.get(id(q))
    if entry is None:
        entry = var_sets[id(q)] = (q, frozenset(all_vars(q)))   # q kept alive: its id stays unique
    reads = frozenset((v, env[v]) for v in entry[1] if v in env)
    key = (id(q), outs, reads)
    hit = groups.get(key)
    if hit is None:
        hit = groups[key] = _group(q, db, env, outs)
    return hit


@deep("the calculus expression (calc evaluator)")
def evaluate(e, db: Database, env: dict | None = None, out_vars=None) -> dict:
    """Evaluate e; result {tuple of out_vars values: value} (nonzero entries only).
    out_vars defaults to e's output variables sorted by name."""
    env = env or {}
    if out_vars is None:
        _, outs = schema(e, set(env))
        out_vars = tuple(sorted(outs, key=lambda v: v.name))
    saved = getattr(_memo, "groups", None), getattr(_memo, "vars", None)
    _memo.groups, _memo.vars = {}, {}        # db may change between calls: a fresh memo each
    try:
        return _group(e, db, env, tuple(out_vars))
    finally:
        _memo.groups, _memo.vars = saved
