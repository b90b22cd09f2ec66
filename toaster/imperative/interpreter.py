"""ImpEngine: executes the imperative IR in Python over dicts (backend 'imp').

A debugging engine that pins down the IR's meaning for the native backends:
  * maps are dicts key-tuple -> number; MapGet of a missing key is 0; ForEach visits a
    snapshot of the entries matching its pattern and skips zero values;
  * '/', casts, comparisons and function calls are toaster.functions' (IEEE division, casts
    from FLOAT to INT saturating with nan -> 0);
  * tuple mode: apply(batch) runs on_insert_R / on_delete_R once per row, in order;
    batch mode: DELTA_<R> is filled with net multiplicities (zero entries dropped), the
    on_batch_R trigger runs, and DELTA_<R> is cleared.
"""
from __future__ import annotations

from toaster.engine import TriggerEngine
from toaster.runtime.int64 import (ArithmeticOverflow, Journal, NoJournal, blame_maps, imp_writes,
                                    overflow_error, run_atomically)
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear, ImpProgram, delta_map_name)
from toaster.functions import call, cast
from toaster.k3.interpreter import binop


class ImpInterpreter:
    queries, program = (), None     # to name the view in an overflow error

    def __init__(self, maps: dict, journal: Journal | None = None):
        self.maps = maps
        self.journal = journal if journal is not None else NoJournal()

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
                return cast(self.expr(a, env), t)
            case Call(n, args, t):
                return call(n, [self.expr(a, env) for a in args], t, maps=self.maps)
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
                    target = self.maps[m]
                    try:
                        k = tuple(self.expr(x, env) for x in keys)
                        new = binop("+", target.get(k, 0), self.expr(v, env))
                    except ArithmeticOverflow:
                        raise overflow_error(m, self.queries, self.program) from None
                    self.journal.write(target, k)
                    target[k] = new
                case MapSet(m, keys, v):
                    target = self.maps[m]
                    try:
                        k = tuple(self.expr(x, env) for x in keys)
                        new = self.expr(v, env)
                    except ArithmeticOverflow:
                        raise overflow_error(m, self.queries, self.program) from None
                    self.journal.write(target, k)
                    target[k] = new
                case MapClear(m):
                    self.journal.clear(self.maps[m])
                    self.maps[m].clear()
                case _:
                    raise UnsupportedError(f"imperative statement {type(s).__name__}")


class ImpEngine(TriggerEngine):
    backend = "imp"

    def __init__(self, program: ImpProgram):
        super().__init__(program)
        self.maps = {m.name: {} for m in program.maps}
        self.journal = Journal()
        self.interp = ImpInterpreter(self.maps, self.journal)
        self.interp.queries, self.interp.program = self.queries, program
        self._blame = {t.name: blame_maps(t.body, imp_writes) for t in program.triggers}
        run_atomically(self.journal, self._start)

    def _apply(self, batch) -> None:
        run_atomically(self.journal, super()._apply, batch)

    def _run(self, trig, env: dict) -> None:
        for st, blame in zip(trig.body, self._blame[trig.name]):
            try:
                self.interp.run((st,), env)
            except ArithmeticOverflow:     # outside any map write: a local value of the trigger
                raise overflow_error(blame or trig.name, self.queries, self.program) from None

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

    def _checkpoint_state(self, with_tables: bool):
        from toaster.checkpoint import TableLayout
        return self._map_state((TableLayout(m.name, m.key_types, m.value_type)
                                for m in self.program.maps if m.kind == "view"), with_tables)

    def _restore_tables(self, tables: dict) -> None:
        for name, entries in tables.items():     # in place: the interpreter holds these dicts
            self.maps[name].clear()
            self.maps[name].update((k, v) for k, v in entries.items() if v != 0)

    def read_map(self, name: str) -> dict:
        if name not in self.maps:
            raise self._unknown_map(name)
        return {k: v for k, v in self.maps[name].items() if v != 0}
