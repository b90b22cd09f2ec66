"""Canonical text of M3 programs (parsed back by toaster.m3.parser)."""
from __future__ import annotations

from toaster.calculus.printer import (_typed_vars, _vars, print_expr, print_map_decl, print_query_result,
                                      print_relation)


def print_event(ev) -> str:
    if ev.kind == "batch":
        return f"ON BATCH {ev.relation}"
    if ev.kind == "ready":
        return "ON SYSTEM READY"
    sign = "+" if ev.kind == "insert" else "-"
    return f"ON {sign} {ev.relation}({_typed_vars(ev.args)})"


def print_statement(s) -> str:
    return f"{s.target}[{_vars(s.keys)}] {s.op} {print_expr(s.rhs)};"


def print_m3(prog) -> str:
    out = [f"-- M3 program (mode: {prog.mode})"]
    out += [print_relation(r) for r in prog.relations]
    out.append("")
    out += [print_map_decl(m) for m in prog.maps]
    out.append("")
    out += [print_query_result(q) for q in prog.queries]
    for t in prog.triggers:
        out.append("")
        out.append(print_event(t.event) + " {")
        out += ["  " + print_statement(s) for s in t.statements]
        out.append("}")
    return "\n".join(out) + "\n"
