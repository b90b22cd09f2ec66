"""ImpEngine: executes the imperative IR in Python over dicts (backend 'imp').

A debugging engine that pins down the IR's meaning for the native backends:
  * maps are dicts key-tuple -> number; MapGet of a missing key is 0; ForEach visits a
    snapshot of the entries matching its pattern and skips zero values;
  * '/' is float division (IEEE: x / 0 is +-inf, 0 / 0 is nan); Cast converts INT <-> FLOAT and BOOL -> INT;
  * tuple mode: apply(batch) runs on_insert_R / on_delete_R once per row, in order;
    batch mode: DELTA_<R> is filled with net multiplicities (zero entries dropped), the
    on_batch_R trigger runs, and DELTA_<R> is cleared.
"""
from __future__ import annotations

from toaster.engine import Engine
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapClear, ImpProgram, delta_map_name)
from toaster.k3.interpreter import binop, cast, call


class ImpInterpreter:
    def __init__(self, maps: dict):
        self.maps = maps

    def expr(self, e, env):
        match e:
            case LocalRef(n, _):
                return env[n]
            case Lit(v, _):
                return v
            case BinOp(op, a, b, t):
                return binop(op, self.expr(a, env), self.expr(b, env), t)
            case Not(a, _):
                return not self.expr(a, env)
            case Cast(t, a):
                return cast(t, self.expr(a, env))
            case Call(n, args, _):
                return call(n, [self.expr(a, env) for a in args])
            case MapGet(m, keys, _):
                return self.maps[m].get(tuple(self.expr(k, env) for k in keys), 0)
        raise TypeError(f"not an imperative expression: {e!r}")

    def run(self, stmts, env):
        for s in stmts:
            match s:
                case Declare(v, init) | Assign(v, init):
                    env[v.name] = self.expr(init, env)
                case If(c, then, orelse):
                    self.run(then if self.expr(c, env) else orelse, env)
                case ForEach(m, pat, kvs, vv, body):
                    bound = [(i, self.expr(p, env)) for i, p in enumerate(pat) if p is not None]
                    free = [(i, k.name) for i, k in enumerate(kvs) if k is not None]
                    for key, val in list(self.maps[m].items()):
                        if val == 0 or any(key[i] != x for i, x in bound):
                            continue
                        for i, n in free:
                            env[n] = key[i]
                        env[vv.name] = val
                        self.run(body, env)
                case MapAdd(m, keys, v):
                    k = tuple(self.expr(x, env) for x in keys)
                    target = self.maps[m]
                    target[k] = target.get(k, 0) + self.expr(v, env)
                case MapClear(m):
                    self.maps[m].clear()
                case _:
                    raise UnsupportedError(f"imperative statement {type(s).__name__}")


class ImpEngine(Engine):
    backend = "imp"

    def __init__(self, program: ImpProgram):
        super().__init__(program.relations, program.queries)
        self.program = program
        self.maps = {m.name: {} for m in program.maps}
        self.interp = ImpInterpreter(self.maps)
        self.triggers = {(t.event.kind, t.event.relation): t for t in program.triggers}

    def _run(self, trig, args) -> None:
        env = {p.name: a for p, a in zip(trig.params, args)}
        self.interp.run(trig.body, env)

    def _apply(self, batch) -> None:
        rel = batch.relation.upper()
        if self.program.mode == "batch":
            trig = self.triggers.get(("batch", rel))
            if trig is None:
                return
            delta = self.maps[delta_map_name(rel)]
            for s, row in batch.rows():
                delta[row] = delta.get(row, 0) + s
            for k in [k for k, v in delta.items() if v == 0]:
                del delta[k]
            try:
                self._run(trig, ())
            finally:
                delta.clear()
            return
        for s, row in batch.rows():
            trig = self.triggers.get(("insert" if s > 0 else "delete", rel))
            if trig is not None:
                self._run(trig, row)

    def read_map(self, name: str) -> dict:
        if name not in self.maps:
            raise KeyError(name)
        return {k: v for k, v in self.maps[name].items() if v != 0}
