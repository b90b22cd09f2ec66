"""Canonical text for K3 programs: print_k3(program) / print_k3_expr(e); parsed back by k3.parser.

Scalars print inline; collection operators put their function on one line and their input
collection indented below, so a pipeline reads top (consumer) to bottom (source):

    iterate \\(B:int, _v3:int) ->
        QUERY_1[] += _v3
      over
        slice M2[b, *]

Layout is only for reading: the grammar ignores whitespace, and every construct is closed by a
keyword or a bracket. Types are written where a binder introduces a name (lambda and let
parameters, trigger parameters, map declarations) and are inferred elsewhere: a variable from
its binder, a lookup or slice from its map, `(a + b)` from its operands. A node whose stored
type differs from the inferred one is ascribed, `(e :: float)`, so `parse(print(p)) == p`.
The header holds the relations and result shapes in M3 syntax.
"""
from __future__ import annotations

from toaster.calculus.printer import print_query_result, print_relation
from toaster.k3.ir import (
    Var, Const, BinOp, Not, Cast, Call, Lookup, Tuple, Project, Lambda, Apply, IfThenElse,
    Empty, Singleton, Union, Slice, Map, Filter, Flatten, Aggregate, GroupByAggregate,
    Iterate, Update, Replace, Clear, Block, K3Program, CollType, TupleType, type_of,
)
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, Type, date_to_int, int_to_date

IND = "  "
LOGIC_OPS = ("=", "!=", "<", "<=", ">", ">=", "and", "or")


def binop_type(op: str, left_type, right_type):
    """The type a parsed `(a op b)` gets unless it is ascribed."""
    if op in LOGIC_OPS:
        return BOOL
    if op == "/" or FLOAT in (left_type, right_type):
        return FLOAT
    return left_type if left_type == right_type else INT


def print_const(v, t) -> str:
    """A literal whose syntax gives back its type (shared with the imperative printer)."""
    if t == STRING:
        return "'" + str(v).replace("'", "''") + "'"
    if t == BOOL:
        return "true" if v else "false"
    if t == DATE:
        try:
            text = int_to_date(v)
            if date_to_int(text) == v:
                return f"DATE('{text}')"
        except ValueError:
            pass
        return f"DATE({int(v)})"
    if t == FLOAT:
        s = repr(float(v))
        return s if any(ch in s for ch in ".ein") else s + ".0"
    if t == INT and int(v) == v:
        return str(int(v))
    raise TypeError(f"constant {v!r} of type {t} has no literal syntax")


def _params(ps) -> str:
    return "\\(" + ", ".join(f"{p.name}:{p.type}" for p in ps) + ")"


class _Printer:
    """Prints expressions in a scope: `env` maps variable names to their binders' types."""

    def __init__(self, maps: dict | None):
        self.maps = maps  # name -> K3Map, None when printing an expression alone

    # ------------------------------------------------------------ inference
    def _inferred(self, e, env: dict):
        match e:
            case Var(n, _):
                return env.get(n)
            case BinOp(op, a, b, _):
                return binop_type(op, type_of(a), type_of(b))
            case Lookup(m, _, _):
                return self.maps[m].value_type if self.maps and m in self.maps else None
        return None

    def _ascription(self, e, env: dict):
        """The type to ascribe to e (None: the parser infers the stored one)."""
        if isinstance(e, (Var, BinOp, Lookup)) and self._inferred(e, env) != e.type:
            return e.type
        return None

    def _slice_type(self, e: Slice):
        m = self.maps.get(e.map) if self.maps else None
        if m is not None and (tuple(m.key_types), m.value_type) == (tuple(e.key_types), e.value_type):
            return ""
        return f" :: {CollType(TupleType(tuple(e.key_types) + (e.value_type,)))}"

    # --------------------------------------------------------------- inline
    def is_inline(self, e) -> bool:
        """Expressions printed on one line (no collection or statement inside)."""
        match e:
            case Var() | Const():
                return True
            case Lookup(_, args, _) | Call(_, args, _) | Tuple(args):
                return all(self.is_inline(a) for a in args)
            case BinOp(_, a, b, _):
                return self.is_inline(a) and self.is_inline(b)
            case Not(a) | Cast(_, a) | Project(a, _):
                return self.is_inline(a)
        return False

    def inline(self, e, env: dict) -> str:
        t = self._ascription(e, env)
        text = self._inline(e, env)
        return f"({text} :: {t})" if t is not None else text

    def _inline(self, e, env: dict) -> str:
        match e:
            case Var(n, _):
                return n
            case Const(v, t):
                return print_const(v, t)
            case BinOp(op, a, b, _):
                return f"({self.inline(a, env)} {op} {self.inline(b, env)})"
            case Not(a):
                return f"not {self.inline(a, env)}"
            case Cast(t, a):
                return f"{t}({self.inline(a, env)})"
            case Call(n, args, t):
                return f"{n}:{t}(" + ", ".join(self.inline(a, env) for a in args) + ")"
            case Lookup(m, keys, _):
                return f"{m}[" + ", ".join(self.inline(k, env) for k in keys) + "]"
            case Tuple(es):
                if len(es) == 1:
                    return f"({self.inline(es[0], env)},)"
                return "(" + ", ".join(self.inline(x, env) for x in es) + ")"
            case Project(a, i):
                inner = self.inline(a, env)
                return f"{inner}.{i}" if _is_primary(a) and not inner.startswith("not ") else f"({inner}).{i}"
        raise TypeError(f"not inline: {e!r}")

    # ---------------------------------------------------------------- lines
    def lines(self, e, depth: int, env: dict) -> list[str]:
        pad = IND * depth
        if self.is_inline(e):
            return [pad + self.inline(e, env)]
        t = self._ascription(e, env)
        if t is not None:
            return [pad + "("] + self._lines(e, depth + 1, env) + [pad + f":: {t})"]
        return self._lines(e, depth, env)

    def _seq(self, open_: str, items, close: str, depth: int, env: dict, trailing: bool = False) -> list[str]:
        """open_ item, item, ... close, one item per group of lines."""
        pad = IND * depth
        out = [pad + open_]
        for i, x in enumerate(items):
            sub = self.lines(x, depth + 2, env)
            if i < len(items) - 1 or trailing:
                sub[-1] += ","
            out += sub
        return out + [pad + close]

    def _lines(self, e, depth: int, env: dict) -> list[str]:
        pad = IND * depth
        match e:
            case Tuple(es):
                return self._seq("(", es, ")", depth, env, trailing=len(es) == 1)
            case BinOp(op, a, b, _):
                return ([pad + "("] + self.lines(a, depth + 2, env) + [pad + IND + op]
                        + self.lines(b, depth + 2, env) + [pad + ")"])
            case Cast(t, a):
                return [pad + f"{t}("] + self.lines(a, depth + 2, env) + [pad + ")"]
            case Not(a):
                return [pad + "not"] + self.lines(a, depth + 2, env)
            case Call(n, args, t):
                return self._seq(f"{n}:{t}(", args, ")", depth, env)
            case Lookup(m, keys, _):
                return self._seq(f"{m}[", keys, "]", depth, env)
            case Project(a, i):
                return [pad + "("] + self.lines(a, depth + 2, env) + [pad + f").{i}"]
            case Lambda():
                return self._lambda([pad], e, depth, env)
            case Apply(fn, args) if len(fn.params) == len(args):
                out = []
                for i, (p, a) in enumerate(zip(fn.params, args)):
                    head = pad + ("let " if i == 0 else IND + ", ") + f"{p.name}:{p.type} ="
                    if self.is_inline(a):
                        out.append(f"{head} {self.inline(a, env)}")
                    else:
                        out += [head] + self.lines(a, depth + 2, env)
                inner = env | {p.name: p.type for p in fn.params}
                return out + [pad + "in"] + self.lines(fn.body, depth + 1, inner)
            case Apply(fn, args):
                return ([pad + "apply"] + self.lines(fn, depth + 2, env) + [pad + "to"]
                        + self._seq("(", args, ")", depth + 1, env))
            case IfThenElse(c, a, b):
                out = [pad + "if"] + self.lines(c, depth + 2, env) if not self.is_inline(c) \
                    else [pad + "if " + self.inline(c, env)]
                one_armed = b == Block(())
                if not one_armed and _open_tail(a):
                    out += [pad + "then ("] + self.lines(a, depth + 1, env) + [pad + ")"]
                else:
                    out += [pad + "then"] + self.lines(a, depth + 1, env)
                return out if one_armed else out + [pad + "else"] + self.lines(b, depth + 1, env)
            case Empty(t):
                return [pad + f"empty {t}"]
            case Singleton(x):
                if self.is_inline(x):
                    return [pad + "singleton " + self.inline(x, env)]
                return [pad + "singleton"] + self.lines(x, depth + 1, env)
            case Union(parts):
                return self._seq("union(", parts, ")", depth, env)
            case Slice(m, pat, _, _):
                return [pad + f"slice {m}[" + ", ".join("*" if p is None else self.inline(p, env) for p in pat)
                        + "]" + self._slice_type(e)]
            case Map(fn, coll):
                return self._op([pad + "map"], fn, coll, depth, env)
            case Filter(fn, coll):
                return self._op([pad + "filter"], fn, coll, depth, env)
            case Flatten(coll):
                return [pad + "flatten"] + self.lines(coll, depth + 1, env)
            case Aggregate(fn, init, coll):
                return self._op(self._init(init, depth, env), fn, coll, depth, env)
            case GroupByAggregate(g, fn, init, coll):
                return (self._lambda([pad + "group_by"], g, depth, env)
                        + self._op(self._init(init, depth, env), fn, coll, depth, env))
            case Iterate(fn, coll):
                return self._op([pad + "iterate"], fn, coll, depth, env)
            case Update(m, keys, v):
                if all(self.is_inline(k) for k in keys):
                    lhs = f"{m}[" + ", ".join(self.inline(k, env) for k in keys) + "] +="
                    if self.is_inline(v):
                        return [pad + lhs + " " + self.inline(v, env)]
                    return [pad + lhs] + self.lines(v, depth + 2, env)
                return (self._seq(f"{m}[", keys, "] +=", depth, env)) + self.lines(v, depth + 2, env)
            case Replace(m, coll):
                return [pad + f"{m} :="] + self.lines(coll, depth + 2, env)
            case Clear(m):
                return [pad + f"clear {m}"]
            case Block(stmts):
                out = [pad + "{"]
                for s in stmts:
                    out += self.lines(s, depth + 1, env)
                return out + [pad + "}"]
        raise TypeError(f"not a K3 expression: {e!r}")

    def _init(self, init, depth: int, env: dict) -> list[str]:
        pad = IND * depth
        if self.is_inline(init):
            return [pad + f"aggregate init {self.inline(init, env)}"]
        return [pad + "aggregate init"] + self.lines(init, depth + 2, env) + [pad + IND + "with"]

    def _lambda(self, head: list[str], fn: Lambda, depth: int, env: dict) -> list[str]:
        """head's last line followed by `\\(params) -> body` (the body indented below it)."""
        inner = env | {p.name: p.type for p in fn.params}
        first = head[-1] + ("" if head[-1].isspace() or not head[-1] else " ") + _params(fn.params) + " ->"
        if self.is_inline(fn.body):
            return head[:-1] + [f"{first} {self.inline(fn.body, inner)}"]
        return head[:-1] + [first] + self.lines(fn.body, depth + 2, inner)

    def _op(self, head: list[str], fn: Lambda, coll, depth: int, env: dict) -> list[str]:
        """`head \\(params) -> body over coll`."""
        return self._lambda(head, fn, depth, env) + [IND * (depth + 1) + "over"] + self.lines(coll, depth + 2, env)


def _is_primary(e) -> bool:
    """Printed as an atom that a postfix `.i` can follow."""
    return isinstance(e, (Var, Lookup, BinOp, Cast, Call, Tuple, Project))


def _open_tail(e) -> bool:
    """e ends in a one-armed `if` that would capture a following `else`."""
    match e:
        case IfThenElse(_, _, b):
            return b == Block(()) or _open_tail(b)
        case Apply(fn, _):
            return _open_tail(fn.body)
    return False


def print_k3_expr(e, maps: dict | None = None, env: dict | None = None) -> str:
    """One expression; `maps` (name -> K3Map) and `env` (variable name -> type) are the context
    its types are inferred from (without them, variables and lookups are ascribed)."""
    return "\n".join(_Printer(maps).lines(e, 0, dict(env or {})))


def print_map(m) -> str:
    role = "" if m.role == "aux" else f"{m.role} "
    return f"{role}{m.kind} map {m.name}[" + ", ".join(str(t) for t in m.key_types) + f"] : {m.value_type}"


def print_event(ev, params) -> str:
    """The event a trigger implements; its arguments are written only when they are not the params."""
    if ev.kind == "batch":
        return f"ON BATCH {ev.relation}"
    if ev.kind == "ready":
        return "ON SYSTEM READY"
    sign = "+" if ev.kind == "insert" else "-"
    same = [(a.name, a.type) for a in ev.args] == [(p.name, p.type) for p in params]
    args = "" if same else "(" + ", ".join(f"{a.name}:{a.type}" for a in ev.args) + ")"
    return f"ON {sign}{ev.relation}{args}"


def print_k3(program: K3Program) -> str:
    out = [f"K3 PROGRAM ({program.mode} mode)"]
    out += [print_relation(r) for r in program.relations]
    out += [print_query_result(q) for q in program.queries]
    out.append("")
    out += [print_map(m) for m in program.maps]
    printer = _Printer({m.name: m for m in program.maps})
    for t in program.triggers:
        out.append("")
        params = ", ".join(f"{p.name}: {p.type}" for p in t.params)
        out.append(f"trigger {t.name}({params}) {print_event(t.event, t.params)} {{")
        env = {p.name: p.type for p in t.params}
        for s in t.body:
            out += printer.lines(s, 1, env)
        out.append("}")
    return "\n".join(out) + "\n"
