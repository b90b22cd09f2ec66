"""Canonical text for K3 programs: print_k3(program) / print_k3_expr(e).

Scalars print inline; collection operators put their function on one line and their input
collection indented below, so a pipeline reads top (consumer) to bottom (source):

    iterate \\(B, _v3) ->
        QUERY_1[] += _v3
      over map \\(_k1, B, _v2) -> (B, _v2)
        slice M2[b, *]
"""
from __future__ import annotations

from toaster.k3.ir import (
    Var, Const, BinOp, Not, Cast, Call, Lookup, Tuple, Project, Lambda, Apply, IfThenElse,
    Empty, Singleton, Union, Slice, Map, Filter, Flatten, Aggregate, GroupByAggregate,
    Iterate, Update, Replace, Clear, Block, K3Program,
)
from toaster.types import STRING

IND = "  "


def _const(v, t) -> str:
    if t == STRING:
        return "'" + str(v).replace("'", "''") + "'"
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _params(ps) -> str:
    return "\\(" + ", ".join(p.name for p in ps) + ")"


def _is_inline(e) -> bool:
    """Expressions printed on one line (no collection or statement inside)."""
    match e:
        case Var() | Const() | Lookup():
            return all(_is_inline(k) for k in getattr(e, "keys", ()))
        case BinOp(_, a, b, _):
            return _is_inline(a) and _is_inline(b)
        case Not(a) | Cast(_, a) | Project(a, _):
            return _is_inline(a)
        case Call(_, args, _) | Tuple(args):
            return all(_is_inline(a) for a in args)
    return False


def inline(e) -> str:
    match e:
        case Var(n, _):
            return n
        case Const(v, t):
            return _const(v, t)
        case BinOp(op, a, b, _):
            return f"({inline(a)} {op} {inline(b)})"
        case Not(a):
            return f"not {inline(a)}"
        case Cast(t, a):
            return f"{t}({inline(a)})"
        case Call(n, args, _):
            return f"{n}(" + ", ".join(inline(a) for a in args) + ")"
        case Lookup(m, keys, _):
            return f"{m}[" + ", ".join(inline(k) for k in keys) + "]"
        case Tuple(es):
            return "(" + ", ".join(inline(x) for x in es) + ")"
        case Project(a, i):
            return f"{inline(a)}.{i}"
    raise TypeError(f"not inline: {e!r}")


def lines(e, depth: int = 0) -> list[str]:
    pad = IND * depth
    if _is_inline(e):
        return [pad + inline(e)]
    match e:
        case Tuple(es):
            out = [pad + "tuple"]
            for x in es:
                out += lines(x, depth + 2)
            return out
        case BinOp(op, a, b, _):
            return [pad + f"binop {op}"] + lines(a, depth + 2) + lines(b, depth + 2)
        case Cast(t, a):
            return [pad + f"cast {t}"] + lines(a, depth + 2)
        case Not(a):
            return [pad + "not"] + lines(a, depth + 2)
        case Call(n, args, _):
            out = [pad + f"call {n}"]
            for a in args:
                out += lines(a, depth + 2)
            return out
        case Lookup(m, keys, _):
            out = [pad + f"lookup {m}"]
            for k in keys:
                out += lines(k, depth + 2)
            return out
        case Project(a, i):
            return [pad + f"project {i}"] + lines(a, depth + 2)
        case Lambda(ps, body):
            return [pad + _params(ps) + " ->"] + lines(body, depth + 2)
        case Apply(fn, args):
            out = [pad + "let " + ", ".join(f"{p.name} = {inline(a) if _is_inline(a) else '...'}"
                                            for p, a in zip(fn.params, args))]
            for p, a in zip(fn.params, args):
                if not _is_inline(a):
                    out += [pad + IND + f"{p.name} ="] + lines(a, depth + 2)
            return out + [pad + "in"] + lines(fn.body, depth + 1)
        case IfThenElse(c, a, b):
            out = ([pad + "if " + (inline(c) if _is_inline(c) else "")] +
                   ([] if _is_inline(c) else lines(c, depth + 2)) + [pad + "then"] + lines(a, depth + 1))
            if b == Block(()):  # a one-armed statement conditional
                return out
            return out + [pad + "else"] + lines(b, depth + 1)
        case Empty(t):
            return [pad + f"empty {t}"]
        case Singleton(x):
            return [pad + "singleton"] + lines(x, depth + 1)
        case Union(parts):
            out = [pad + "union"]
            for p in parts:
                out += lines(p, depth + 1)
            return out
        case Slice(m, pat, _, _):
            return [pad + f"slice {m}[" + ", ".join("*" if p is None else inline(p) for p in pat) + "]"]
        case Map(fn, coll):
            return _op("map", fn, coll, depth)
        case Filter(fn, coll):
            return _op("filter", fn, coll, depth)
        case Flatten(coll):
            return [pad + "flatten"] + lines(coll, depth + 1)
        case Aggregate(fn, init, coll):
            return _op(f"aggregate init {inline(init)}", fn, coll, depth)
        case GroupByAggregate(g, fn, init, coll):
            head = [pad + f"group_by {_params(g.params)} -> {inline(g.body)}" if _is_inline(g.body)
                    else pad + "group_by"]
            if not _is_inline(g.body):
                head += lines(g, depth + 2)
            return head + _op(f"aggregate init {inline(init)}", fn, coll, depth + 1)
        case Iterate(fn, coll):
            return _op("iterate", fn, coll, depth)
        case Update(m, keys, v):
            lhs = f"{m}[" + ", ".join(inline(k) for k in keys) + "] +="
            if _is_inline(v):
                return [pad + lhs + " " + inline(v)]
            return [pad + lhs] + lines(v, depth + 2)
        case Replace(m, coll):
            return [pad + f"{m} :="] + lines(coll, depth + 2)
        case Clear(m):
            return [pad + f"clear {m}"]
        case Block(stmts):
            out = [pad + "{"]
            for s in stmts:
                out += lines(s, depth + 1)
            return out + [pad + "}"]
    raise TypeError(f"not a K3 expression: {e!r}")


def _op(name: str, fn: Lambda, coll, depth: int) -> list[str]:
    pad = IND * depth
    if _is_inline(fn.body):
        out = [pad + f"{name} {_params(fn.params)} -> {inline(fn.body)}"]
    else:
        out = [pad + f"{name} {_params(fn.params)} ->"] + lines(fn.body, depth + 2)
    return out + [pad + IND + "over"] + lines(coll, depth + 2)


def print_k3_expr(e) -> str:
    return "\n".join(lines(e))


def print_k3(program: K3Program) -> str:
    out = [f"-- K3 program ({program.mode} mode)"]
    for m in program.maps:
        keys = ", ".join(str(t) for t in m.key_types)
        out.append(f"map {m.name}[{keys}] : {m.value_type}  -- {m.kind}" + (f", {m.role}" if m.kind == "view" else ""))
    for t in program.triggers:
        out.append("")
        out.append(f"trigger {t.name}(" + ", ".join(f"{p.name}: {p.type}" for p in t.params) + ") {")
        for s in t.body:
            out += lines(s, 1)
        out.append("}")
    return "\n".join(out) + "\n"
