"""C-like canonical text for the imperative IR: print_imp(program), print_stmts(stmts)."""
from __future__ import annotations

from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear, ImpProgram)
from toaster.types import STRING, BOOL

IND = "  "


def print_imp_expr(e) -> str:
    match e:
        case LocalRef(n, _):
            return n
        case Lit(v, t):
            if t == STRING:
                return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
            if t == BOOL:
                return "true" if v else "false"
            return repr(v)
        case BinOp(op, a, b, _):
            sym = {"=": "==", "and": "&&", "or": "||"}.get(op, op)
            return f"({print_imp_expr(a)} {sym} {print_imp_expr(b)})"
        case Not(a, _):
            return f"!{print_imp_expr(a)}"
        case Cast(t, a):
            return f"({t}){print_imp_expr(a)}"
        case Call(n, args, _):
            return f"{n}(" + ", ".join(print_imp_expr(a) for a in args) + ")"
        case MapGet(m, keys, _):
            return f"{m}[" + ", ".join(print_imp_expr(k) for k in keys) + "]"
    raise TypeError(f"not an imperative expression: {e!r}")


def print_stmts(stmts, depth: int = 0) -> list[str]:
    pad = IND * depth
    out = []
    for s in stmts:
        match s:
            case Declare(v, init):
                out.append(f"{pad}{v.type} {v.name} = {print_imp_expr(init)};")
            case Assign(v, val):
                out.append(f"{pad}{v.name} = {print_imp_expr(val)};")
            case If(c, then, orelse):
                out.append(f"{pad}if ({print_imp_expr(c)}) {{")
                out += print_stmts(then, depth + 1)
                if orelse:
                    out.append(f"{pad}}} else {{")
                    out += print_stmts(orelse, depth + 1)
                out.append(f"{pad}}}")
            case ForEach(m, pat, kvs, vv, body):
                parts = []
                for p, k in zip(pat, kvs):
                    parts.append(print_imp_expr(p) if p is not None else f"{k.type} {k.name}")
                out.append(f"{pad}foreach ([{', '.join(parts)}] -> {vv.type} {vv.name} in {m}) {{")
                out += print_stmts(body, depth + 1)
                out.append(f"{pad}}}")
            case MapAdd(m, keys, v):
                out.append(f"{pad}{m}[{', '.join(print_imp_expr(k) for k in keys)}] += {print_imp_expr(v)};")
            case MapSet(m, keys, v):
                out.append(f"{pad}{m}[{', '.join(print_imp_expr(k) for k in keys)}] = {print_imp_expr(v)};")
            case MapClear(m):
                out.append(f"{pad}clear({m});")
            case _:
                raise TypeError(f"not an imperative statement: {s!r}")
    return out


def print_imp(program: ImpProgram) -> str:
    out = [f"// imperative program ({program.mode} mode)"]
    for m in program.maps:
        idx = " indexes " + " ".join("(" + ",".join(str(i) for i in ix) + ")" for ix in m.indexes) if m.indexes else ""
        out.append(f"{m.kind} map {m.name}[{', '.join(str(t) for t in m.key_types)}] -> {m.value_type};{idx}")
    for t in program.triggers:
        out.append("")
        out.append(f"void {t.name}(" + ", ".join(f"{p.type} {p.name}" for p in t.params) + ") {")
        out += print_stmts(t.body, 1)
        out.append("}")
    return "\n".join(out) + "\n"
