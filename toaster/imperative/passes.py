"""imp -> imp passes: 'imp_verify' (a well-formedness check that returns the program unchanged).

Checked: every LocalRef is a trigger parameter, declared earlier in an enclosing block, or
bound by an enclosing ForEach, with the type it was introduced with; no name is introduced
twice in one scope chain; every map exists and is used with its arity and key types; MapAdd
values and Assign values have the type of their target; conditions are BOOL; arithmetic
operands have the operator's type ('/' is FLOAT); a ForEach body never writes the map it
iterates; ForEach slices use indexes listed in the MapSpec; batch triggers have no params.
"""
from __future__ import annotations

from toaster.recursion import deep
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear, ImpProgram, delta_map_name)
from toaster.passes import pass_
from toaster.types import INT, FLOAT, BOOL, DATE


class ImpVerifyError(AssertionError):
    """An internal compiler error: the imperative program is malformed."""


_NUMERIC_KEYS = {INT, DATE}


def _compatible(have, want) -> bool:
    return have == want or ({have, want} <= _NUMERIC_KEYS)


class _Verifier:
    def __init__(self, program: ImpProgram):
        self.program = program
        self.maps = {}
        for m in program.maps:
            if m.name in self.maps:
                self.fail(f"map {m.name} declared twice")
            if m.value_type not in (INT, FLOAT):
                self.fail(f"map {m.name} has non-numeric value type {m.value_type}")
            for ix in m.indexes:
                if not ix or len(ix) >= len(m.key_types) or list(ix) != sorted(set(ix)) \
                        or any(not 0 <= i < len(m.key_types) for i in ix):
                    self.fail(f"map {m.name}: bad index {ix}")
            self.maps[m.name] = m
        self.where = ""

    def fail(self, msg: str):
        raise ImpVerifyError(f"imp_verify: {self.where}{msg}")

    def map(self, name: str):
        if name not in self.maps:
            self.fail(f"unknown map {name}")
        return self.maps[name]

    def expr(self, e, scope: dict):
        match e:
            case LocalRef(n, t):
                if n not in scope:
                    self.fail(f"local {n} used but not declared")
                if scope[n] != t:
                    self.fail(f"local {n} used as {t}, declared {scope[n]}")
                return t
            case Lit(v, t):
                return t
            case BinOp(op, a, b, t):
                ta, tb = self.expr(a, scope), self.expr(b, scope)
                if op in ("+", "-", "*", "/"):
                    want = FLOAT if op == "/" else t
                    if t != want or ta != want or tb != want:
                        self.fail(f"arithmetic {op} on {ta}, {tb} typed {t}")
                elif op in ("and", "or"):
                    if not (ta == tb == t == BOOL):
                        self.fail(f"logic {op} on {ta}, {tb}")
                elif op in ("=", "!=", "<", "<=", ">", ">="):
                    if t != BOOL or not _compatible(ta, tb):
                        self.fail(f"comparison {op} of {ta} and {tb}")
                else:
                    self.fail(f"unknown operator {op!r}")
                return t
            case Not(a, t):
                if self.expr(a, scope) != BOOL or t != BOOL:
                    self.fail("not of a non-boolean")
                return t
            case Cast(t, a):
                ta = self.expr(a, scope)
                if t not in (INT, FLOAT) or ta not in (INT, FLOAT, BOOL):
                    self.fail(f"cast {ta} -> {t}")
                return t
            case Call(_, args, t):
                for a in args:
                    self.expr(a, scope)
                return t
            case MapGet(m, keys, t):
                spec = self.map(m)
                self.keys(spec, keys, scope)
                if t != spec.value_type:
                    self.fail(f"MapGet {m} typed {t}, map holds {spec.value_type}")
                return t
        self.fail(f"not an expression: {e!r}")

    def keys(self, spec, keys, scope):
        if len(keys) != len(spec.key_types):
            self.fail(f"map {spec.name} used with {len(keys)} keys, has {len(spec.key_types)}")
        for k, kt in zip(keys, spec.key_types):
            if k is not None and not _compatible(self.expr(k, scope), kt):
                self.fail(f"map {spec.name} key of type {self.expr(k, scope)}, expected {kt}")

    def introduce(self, var: LocalRef, scope: dict):
        if var.name in scope:
            self.fail(f"local {var.name} introduced twice")
        scope[var.name] = var.type

    def block(self, stmts, scope: dict, iterating: frozenset):
        scope = dict(scope)
        for s in stmts:
            match s:
                case Declare(v, init):
                    t = self.expr(init, scope)
                    if t != v.type:
                        self.fail(f"Declare {v.name}: {v.type} initialised with {t}")
                    self.introduce(v, scope)
                case Assign(v, val):
                    self.expr(v, scope)
                    if self.expr(val, scope) != v.type:
                        self.fail(f"Assign {v.name}: type mismatch")
                case If(c, then, orelse):
                    if self.expr(c, scope) != BOOL:
                        self.fail("If condition is not BOOL")
                    self.block(then, scope, iterating)
                    self.block(orelse, scope, iterating)
                case ForEach(m, pat, kvs, vv, body):
                    spec = self.map(m)
                    if len(pat) != len(spec.key_types) or len(kvs) != len(pat):
                        self.fail(f"ForEach over {m}: pattern arity")
                    inner = dict(scope)
                    for p, k, kt in zip(pat, kvs, spec.key_types):
                        if (p is None) == (k is None):
                            self.fail(f"ForEach over {m}: each position needs exactly one of pattern / key var")
                        if p is not None and not _compatible(self.expr(p, scope), kt):
                            self.fail(f"ForEach over {m}: pattern type")
                        if k is not None:
                            if k.type != kt:
                                self.fail(f"ForEach over {m}: key var {k.name} typed {k.type}, key is {kt}")
                            self.introduce(k, inner)
                    if vv.type != spec.value_type:
                        self.fail(f"ForEach over {m}: value var typed {vv.type}")
                    self.introduce(vv, inner)
                    bound = tuple(i for i, p in enumerate(pat) if p is not None)
                    if 0 < len(bound) < len(pat) and bound not in spec.indexes:
                        self.fail(f"ForEach over {m}: slice {bound} has no index in the MapSpec")
                    self.block(body, inner, iterating | {m})
                case MapAdd(m, keys, v) | MapSet(m, keys, v):
                    op = type(s).__name__
                    spec = self.map(m)
                    if m in iterating:
                        self.fail(f"{op} to {m} inside a ForEach over it")
                    self.keys(spec, keys, scope)
                    if self.expr(v, scope) != spec.value_type:
                        self.fail(f"{op} to {m}: value is {self.expr(v, scope)}, map holds {spec.value_type}")
                case MapClear(m):
                    self.map(m)
                    if m in iterating:
                        self.fail(f"MapClear of {m} inside a ForEach over it")
                case _:
                    self.fail(f"not a statement: {s!r}")

    def run(self):
        for t in self.program.triggers:
            self.where = f"trigger {t.name}: "
            if t.event.kind == "batch":
                if t.params:
                    self.fail("batch trigger with params")
                d = delta_map_name(t.event.relation)
                if d not in self.maps or self.maps[d].kind != "delta":
                    self.fail(f"batch trigger without delta map {d}")
            scope = {}
            for p in t.params:
                self.introduce(p, scope)
            self.block(t.body, scope, frozenset())


@deep("the imperative program (imp_verify)")
def verify_imp(program: ImpProgram) -> ImpProgram:
    _Verifier(program).run()
    return program


@pass_("imp_verify", "imp", "imp")
def imp_verify(program: ImpProgram, options=None) -> ImpProgram:
    """Check the imperative program is well formed (locals, maps, types); returns it unchanged."""
    return verify_imp(program)
