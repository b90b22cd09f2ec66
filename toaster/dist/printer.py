"""Canonical text of distributed M3: M3 syntax plus location tags and transformers
(parsed back by dist_parser.parse_dist).

    DISTRIBUTED M3 (blocks)
    MAP M1[B:int]: int @ Dist(0);
    ON BATCH R {
      BLOCK dist {
        QUERY_1[] += Gather(AggSum([], (Scatter[B]((DELTA R)(A, B)) * M1[B]))) @ Local;
      }
      BLOCK exchange {
        TMP_2 := Repart[0](TMP_1);
      }
    }
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.calculus.printer import print_expr, print_term, print_query_result, print_relation, _vars, _typed_vars
from toaster.m3.printer import print_event
from toaster.dist.ir import (Repart, Scatter, Gather, Broadcast, DistStatement, Exchange, DistProgram,
                                            DistMap)


def print_dist_expr(e) -> str:
    match e:
        case Repart(ps, q):
            return f"Repart[{_vars(ps)}]({print_dist_expr(q)})"
        case Scatter(ps, q):
            return f"Scatter[{_vars(ps)}]({print_dist_expr(q)})"
        case Gather(q):
            return f"Gather({print_dist_expr(q)})"
        case Broadcast(q):
            return f"Broadcast({print_dist_expr(q)})"
        case C.Sum(ts):
            return "(" + " + ".join(print_dist_expr(t) for t in ts) + ")"
        case C.Prod(fs):
            return "(" + " * ".join(print_dist_expr(f) for f in fs) + ")"
        case C.AggSum(gs, q):
            return f"AggSum([{_vars(gs)}], {print_dist_expr(q)})"
        case C.Lift(v, q):
            return f"({v.name} ^= {print_dist_expr(q)})"
        case C.Extremum(kind, gs, t, q):
            return f"Agg{kind.capitalize()}([{_vars(gs)}], {print_term(t)}, {print_dist_expr(q)})"
    return print_expr(e)


def print_dist_map(m: DistMap) -> str:
    kind = "TEMP" if m.kind == "temp" else "MAP"
    copy = f" COPY OF {m.copy_of}" if m.copy_of else ""
    return f"{kind} {m.name}[{_typed_vars(m.keys)}]: {m.type} @ {m.tag}{copy};"


def print_dist_item(item) -> str:
    match item:
        case DistStatement(s, loc):
            return f"{s.target}[{_vars(s.keys)}] {s.op} {print_dist_expr(s.rhs)} @ {loc};"
        case Exchange("gather", target, source, _):
            return f"{target} := Gather({source});"
        case Exchange("broadcast", target, source, _):
            return f"{target} := Broadcast({source});"
        case Exchange(kind, target, source, parts):
            return f"{target} := {kind.capitalize()}[{', '.join(map(str, parts))}]({source});"
    raise TypeError(f"not a distributed statement: {item!r}")


def print_dist(prog: DistProgram) -> str:
    out = [f"DISTRIBUTED M3 ({prog.stage})"]
    out += [print_relation(r) for r in prog.relations]
    out.append("")
    out += [print_dist_map(m) for m in prog.maps]
    out.append("")
    out += [print_query_result(q) for q in prog.queries]
    for t in prog.triggers:
        out.append("")
        out.append(f"{print_event(t.event)} {{")
        for b in t.blocks:
            out.append(f"  BLOCK {b.mode} {{")
            out += ["    " + print_dist_item(i) for i in b.items]
            out.append("  }")
        out.append("}")
    return "\n".join(out) + "\n"
