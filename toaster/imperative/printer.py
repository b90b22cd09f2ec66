"""C-like canonical text for the imperative IR: print_imp(program), print_stmts(stmts); parsed back
by imperative.parser.

Types are written where a name is introduced (map declarations, trigger parameters, `int x = ..;`,
foreach binders) and inferred elsewhere: a local from its declaration, `M[k]` from M's value
type, `(a + b)` from its operands (k3.printer.binop_type). A node whose stored type differs is
ascribed, `(e :: float)`. A trigger's event is written after its parameters (`ON +R`) unless
its name and parameters already say it (`on_insert_R(int a, int b)` is ON +R(a, b)). The header
holds the relations and result shapes in M3 syntax.
"""
from __future__ import annotations

from toaster.calculus.printer import print_query_result, print_relation
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear, ImpProgram)
from toaster.k3.printer import binop_type, print_const
from toaster.types import BOOL, DATE, STRING

IND = "  "
_SYMBOLS = {"=": "==", "and": "&&", "or": "||"}


class _Printer:
    def __init__(self, maps: dict | None):
        self.maps = maps   # name -> MapSpec (None: print alone, every map read is ascribed)

    def _inferred(self, e, env: dict):
        match e:
            case LocalRef(n, _):
                return env.get(n)
            case BinOp(op, a, b, _):
                return binop_type(op, a.type, b.type)
            case Not():
                return BOOL
            case MapGet(m, _, _):
                return self.maps[m].value_type if self.maps and m in self.maps else None
        return e.type

    def expr(self, e, env: dict) -> str:
        text = self._expr(e, env)
        if not isinstance(e, (Lit, Cast, Call)) and self._inferred(e, env) != e.type:
            return f"({text} :: {e.type})"
        return text

    def _expr(self, e, env: dict) -> str:
        match e:
            case LocalRef(n, _):
                return n
            case Lit(v, t):
                if t == STRING:
                    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
                if t == DATE:
                    return print_const(v, t).replace("'", '"')
                return print_const(v, t)
            case BinOp(op, a, b, _):
                return f"({self.expr(a, env)} {_SYMBOLS.get(op, op)} {self.expr(b, env)})"
            case Not(a, _):
                return f"!{self.expr(a, env)}"
            case Cast(t, a):
                return f"({t}){self.expr(a, env)}"
            case Call(n, args, t):
                return f"{n}:{t}(" + ", ".join(self.expr(a, env) for a in args) + ")"
            case MapGet(m, keys, _):
                return f"{m}[" + ", ".join(self.expr(k, env) for k in keys) + "]"
        raise TypeError(f"not an imperative expression: {e!r}")

    def _target(self, v: LocalRef, env: dict) -> str:
        return v.name if env.get(v.name) == v.type else f"({v.name} :: {v.type})"

    def stmts(self, stmts, depth: int, env: dict) -> list[str]:
        pad = IND * depth
        env = dict(env)   # declarations are scoped to the enclosing block
        out = []
        for s in stmts:
            match s:
                case Declare(v, init):
                    out.append(f"{pad}{v.type} {v.name} = {self.expr(init, env)};")
                    env[v.name] = v.type
                case Assign(v, val):
                    out.append(f"{pad}{self._target(v, env)} = {self.expr(val, env)};")
                case If(c, then, orelse):
                    out.append(f"{pad}if ({self.expr(c, env)}) {{")
                    out += self.stmts(then, depth + 1, env)
                    if orelse:
                        out.append(f"{pad}}} else {{")
                        out += self.stmts(orelse, depth + 1, env)
                    out.append(f"{pad}}}")
                case ForEach(m, pat, kvs, vv, body):
                    parts = []
                    inner = dict(env)
                    for p, k in zip(pat, kvs):
                        if p is not None:
                            parts.append(self.expr(p, env))
                        else:
                            parts.append(f"{k.type} {k.name}")
                            inner[k.name] = k.type
                    inner[vv.name] = vv.type
                    out.append(f"{pad}foreach ([{', '.join(parts)}] -> {vv.type} {vv.name} in {m}) {{")
                    out += self.stmts(body, depth + 1, inner)
                    out.append(f"{pad}}}")
                case MapAdd(m, keys, v):
                    out.append(f"{pad}{m}[{', '.join(self.expr(k, env) for k in keys)}] += {self.expr(v, env)};")
                case MapSet(m, keys, v):
                    out.append(f"{pad}{m}[{', '.join(self.expr(k, env) for k in keys)}] = {self.expr(v, env)};")
                case MapClear(m):
                    out.append(f"{pad}clear({m});")
                case _:
                    raise TypeError(f"not an imperative statement: {s!r}")
        return out


def print_imp_expr(e, maps: dict | None = None, env: dict | None = None) -> str:
    return _Printer(maps).expr(e, dict(env or {}))


def print_stmts(stmts, depth: int = 0, maps: dict | None = None, env: dict | None = None) -> list[str]:
    return _Printer(maps).stmts(stmts, depth, dict(env or {}))


def implied_event(name: str, params):
    """The event a trigger's name and parameters imply (on_insert_R(a, b) is ON +R(a, b))."""
    from toaster.calculus.ir import Var
    from toaster.calculus.maps import Event
    kind, _, relation = name[3:].partition("_") if name.startswith("on_") else ("", "", "")
    if kind in ("insert", "delete"):
        return Event(kind, relation, tuple(Var(p.name, p.type) for p in params))
    if kind == "batch" and not params:
        return Event("batch", relation, ())
    if kind == "ready" and not relation and not params:
        return Event("ready", "", ())
    return None


def _event(ev) -> str:
    if ev.kind == "batch":
        return f" ON BATCH {ev.relation}"
    if ev.kind == "ready":
        return " ON SYSTEM READY"
    args = ", ".join(f"{a.type} {a.name}" for a in ev.args)
    return f" ON {'+' if ev.kind == 'insert' else '-'}{ev.relation}({args})"


def print_map_spec(m) -> str:
    idx = " indexes " + " ".join("(" + ",".join(str(i) for i in ix) + ")" for ix in m.indexes) if m.indexes else ""
    return f"{m.kind} map {m.name}[{', '.join(str(t) for t in m.key_types)}] -> {m.value_type};{idx}"


def print_imp(program: ImpProgram) -> str:
    out = [f"IMPERATIVE PROGRAM ({program.mode} mode)"]
    out += [print_relation(r) for r in program.relations]
    out += [print_query_result(q) for q in program.queries]
    out.append("")
    out += [print_map_spec(m) for m in program.maps]
    printer = _Printer({m.name: m for m in program.maps})
    for t in program.triggers:
        out.append("")
        event = "" if implied_event(t.name, t.params) == t.event else _event(t.event)
        out.append(f"void {t.name}(" + ", ".join(f"{p.type} {p.name}" for p in t.params) + f"){event} {{")
        out += printer.stmts(t.body, 1, {p.name: p.type for p in t.params})
        out.append("}")
    return "\n".join(out) + "\n"
