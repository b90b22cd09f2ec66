"""Parse imperative program text (toaster.imperative.printer's output) back to IR:
parse_imp(text, file=None) -> ImpProgram.

The grammar is imp.lark (LALR). Types the text leaves out are recovered as the printer infers
them: a local from its declaration (`int x = ..;`, a foreach binder, a trigger parameter), a map
read from the map's value type, `(a op b)` from its operands; `(e :: t)` overrides.
"""
from __future__ import annotations

import os
from functools import lru_cache

from lark import Lark, Token, Transformer

from toaster.calculus import ir as C
from toaster.calculus.maps import Event
from toaster.errors import SemanticError, ToasterError
from toaster.imperative import ir as I
from toaster.imperative.printer import implied_event
from toaster.k3.parser import (KeywordRules, Unresolved, UNRESOLVED, literal, load_grammar, parse_m3_decls,
                               run_parser)
from toaster.k3.printer import binop_type
from toaster.types import BOOL

_OPS = {"==": "=", "&&": "and", "||": "or"}


def _items(c) -> tuple:
    return tuple(x for x in c if x is not None)


class _Build(KeywordRules, Transformer):
    def binop(self, c):
        return _OPS.get(str(c[0]), str(c[0]))

    # expressions
    def var_e(self, c):
        return I.LocalRef(str(c[0]), Unresolved(c[0].line, c[0].column))

    def map_get(self, c):
        return I.MapGet(str(c[0]), _items(c[1:]), Unresolved(c[0].line, c[0].column))

    def call_e(self, c):
        return I.Call(str(c[0]), _items(c[2:]), c[1])

    def binop_e(self, c):
        return I.BinOp(c[1], c[0], c[2], UNRESOLVED)

    def not_e(self, c):
        return I.Not(c[0], UNRESOLVED)

    def cast_e(self, c):
        return I.Cast(c[0], c[1])

    def ascribe_e(self, c):
        e, t = c
        match e:
            case I.LocalRef(n, _):
                return I.LocalRef(n, t)
            case I.MapGet(m, keys, _):
                return I.MapGet(m, keys, t)
            case I.BinOp(op, a, b, _):
                return I.BinOp(op, a, b, t)
            case I.Not(a, _):
                return I.Not(a, t)
        raise SemanticError(f"cannot ascribe a type to {type(e).__name__}")

    def int_c(self, c):
        return I.Lit(*literal("int", c[0]))

    def float_c(self, c):
        return I.Lit(*literal("float", c[0]))

    def string_c(self, c):
        s = str(c[0])[1:-1]
        return I.Lit(s.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in s else s,
                     literal("string", c[0])[1])

    def date_c(self, c):
        tok = c[0]
        return I.Lit(*literal("date", Token(tok.type, "'" + str(tok)[1:-1] + "'", line=tok.line, column=tok.column)))

    def date_int_c(self, c):
        return I.Lit(*literal("date_int", c[0]))

    def true_c(self, c):
        return I.Lit(True, BOOL)

    def false_c(self, c):
        return I.Lit(False, BOOL)

    # statements
    def param(self, c):
        return I.LocalRef(str(c[1]), c[0])

    def declare(self, c):
        return I.Declare(I.LocalRef(str(c[1]), c[0]), c[2])

    def target(self, c):
        return I.LocalRef(str(c[0]), Unresolved(c[0].line, c[0].column))

    def typed_target(self, c):
        return I.LocalRef(str(c[0]), c[1])

    def assign(self, c):
        return I.Assign(c[0], c[1])

    def else_body(self, c):
        return ("else", tuple(c))

    def if_s(self, c):
        orelse = ()
        if c and isinstance(c[-1], tuple) and c[-1][:1] == ("else",):
            orelse, c = c[-1][1], c[:-1]
        c = [x for x in c if x is not None]
        return I.If(c[0], tuple(c[1:]), orelse)

    def bind_pat(self, c):
        return ("bind", c[0])

    def foreach(self, c):
        name, body_start = None, None
        for i, x in enumerate(c):
            if isinstance(x, Token) and x.type == "NAME":
                name, body_start = str(x), i + 1
                break
        pats = [p for p in c[:body_start - 2] if p is not None]
        vv = c[body_start - 2]
        pattern = tuple(None if isinstance(p, tuple) else p for p in pats)
        key_vars = tuple(p[1] if isinstance(p, tuple) else None for p in pats)
        return I.ForEach(name, pattern, key_vars, vv, tuple(c[body_start:]))

    def map_add(self, c):
        return I.MapAdd(str(c[0]), _items(c[1:-1]), c[-1])

    def map_set(self, c):
        return I.MapSet(str(c[0]), _items(c[1:-1]), c[-1])

    def map_clear(self, c):
        return I.MapClear(str(c[0]))

    # program
    def m3_decl(self, c):
        return c[0]

    def index(self, c):
        return tuple(int(x) for x in c if x is not None)

    def map_spec(self, c):
        kind, name = c[0], str(c[1])
        rest = [x for x in c[2:] if x is not None]
        idx = tuple(x for x in rest if isinstance(x, tuple))
        types = [x for x in rest if not isinstance(x, tuple)]
        return I.MapSpec(name, tuple(types[:-1]), types[-1], kind, idx)

    def tuple_event(self, c):
        args = tuple(C.Var(p.name, p.type) for p in _items(c[2:]))
        return Event("insert" if c[0] == "+" else "delete", str(c[1]), args)

    def batch_event(self, c):
        return Event("batch", str(c[0]), ())

    def ready_event(self, c):
        return Event("ready", "", ())

    def trigger(self, c):
        name = str(c[0])
        params = tuple(x for x in c[1:] if isinstance(x, I.LocalRef))
        event = next((x for x in c[1:] if isinstance(x, Event)), None)
        body = tuple(x for x in c[1 + len(params):] if x is not None and not isinstance(x, (Event, I.LocalRef)))
        if event is None:
            event = implied_event(name, params)
            if event is None:
                raise SemanticError(f"trigger {name} needs an event (ON +R(..), ON BATCH R, ON SYSTEM READY)",
                                    line=c[0].line, column=c[0].column)
        return I.ImpTrigger(name, event, params, body)

    def program(self, c):
        return c


class _Resolver:
    """Fills in Unresolved types with the locals in scope (declarations are block-scoped)."""

    def __init__(self, maps: dict):
        self.maps = maps

    def expr(self, e, env: dict):
        match e:
            case I.LocalRef(n, t):
                if not isinstance(t, Unresolved):
                    return e
                if n not in env:
                    raise SemanticError(f"unknown variable {n}", line=t.line, column=t.column)
                return I.LocalRef(n, env[n])
            case I.Lit():
                return e
            case I.BinOp(op, a, b, t):
                a, b = self.expr(a, env), self.expr(b, env)
                return I.BinOp(op, a, b, binop_type(op, a.type, b.type) if isinstance(t, Unresolved) else t)
            case I.Not(a, t):
                return I.Not(self.expr(a, env), BOOL if isinstance(t, Unresolved) else t)
            case I.Cast(t, a):
                return I.Cast(t, self.expr(a, env))
            case I.Call(n, args, t):
                return I.Call(n, tuple(self.expr(a, env) for a in args), t)
            case I.MapGet(m, keys, t):
                if isinstance(t, Unresolved):
                    if m not in self.maps:
                        raise SemanticError(f"unknown map {m}", line=t.line, column=t.column)
                    t = self.maps[m].value_type
                return I.MapGet(m, tuple(self.expr(k, env) for k in keys), t)
        raise TypeError(f"not an imperative expression: {e!r}")

    def stmts(self, stmts, env: dict) -> tuple:
        env = dict(env)
        out = []
        for s in stmts:
            match s:
                case I.Declare(v, init):
                    out.append(I.Declare(v, self.expr(init, env)))
                    env[v.name] = v.type
                case I.Assign(v, val):
                    out.append(I.Assign(self.expr(v, env), self.expr(val, env)))
                case I.If(c, then, orelse):
                    out.append(I.If(self.expr(c, env), self.stmts(then, env), self.stmts(orelse, env)))
                case I.ForEach(m, pat, kvs, vv, body):
                    inner = dict(env)
                    for k in kvs:
                        if k is not None:
                            inner[k.name] = k.type
                    inner[vv.name] = vv.type
                    pat = tuple(None if p is None else self.expr(p, env) for p in pat)
                    out.append(I.ForEach(m, pat, kvs, vv, self.stmts(body, inner)))
                case I.MapAdd(m, keys, v):
                    out.append(I.MapAdd(m, tuple(self.expr(k, env) for k in keys), self.expr(v, env)))
                case I.MapSet(m, keys, v):
                    out.append(I.MapSet(m, tuple(self.expr(k, env) for k in keys), self.expr(v, env)))
                case I.MapClear():
                    out.append(s)
        return tuple(out)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return load_grammar(os.path.join(os.path.dirname(__file__), "imp.lark"), transformer=_Build())


def parse_imp(text: str, file: str | None = None) -> I.ImpProgram:
    """Parse print_imp's text; errors are ToasterErrors at file:line:col."""
    items = run_parser(_parser(), text, "imperative", file)
    mode = items[0]
    relations, queries = parse_m3_decls([x for x in items[1:] if isinstance(x, Token)], file)
    maps = tuple(x for x in items if isinstance(x, I.MapSpec))
    resolver = _Resolver({m.name: m for m in maps})
    triggers = []
    for t in (x for x in items if isinstance(x, I.ImpTrigger)):
        try:
            body = resolver.stmts(t.body, {p.name: p.type for p in t.params})
        except ToasterError as e:
            raise e.located(file) from None
        triggers.append(I.ImpTrigger(t.name, t.event, t.params, body))
    return I.ImpProgram(relations, maps, tuple(triggers), queries, mode)
