"""`--explain`: a readable summary of an M3 program and its view dependency graph.

The graph (networkx) has one node per map and an edge m -> n when a trigger statement that
writes m reads n: m's maintenance depends on n.
"""
from __future__ import annotations

import networkx as nx

from toaster.m3.hoivm import _maps_read
from toaster.calculus.printer import print_expr
from toaster.m3.printer import print_event, print_statement


def dependency_graph(m3) -> nx.DiGraph:
    g = nx.DiGraph()
    for m in m3.maps:
        g.add_node(m.name, role=m.role, keys=", ".join(k.name for k in m.keys))
    for t in m3.triggers:
        for s in t.statements:
            for read in _maps_read(s.rhs):
                if read != s.target:
                    g.add_edge(s.target, read)
    return g


def explain(m3) -> str:
    g = dependency_graph(m3)
    out = [f"mode: {m3.mode}; {len(m3.maps)} maps, {len(m3.triggers)} triggers, "
           f"{sum(len(t.statements) for t in m3.triggers)} statements", "", "maps:"]
    for m in m3.maps:
        depth = ""
        if m.role == "query":
            depth = " (query)"
        out.append(f"  {m.name}[{', '.join(f'{k.name}:{k.type}' for k in m.keys)}]: {m.type}{depth}")
        out.append(f"      := {print_expr(m.definition)}")
        deps = sorted(g.successors(m.name))
        if deps:
            out.append(f"      maintained from: {', '.join(deps)}")
    out += ["", "triggers:"]
    for t in m3.triggers:
        out.append(f"  {print_event(t.event)}")
        out += [f"      {print_statement(s)}" for s in t.statements]
    if m3.notes:
        out += ["", "decisions:"] + [f"  {n}" for n in m3.notes]
    out += ["", "dependency graph (map -> maps its maintenance reads):"]
    for n in nx.topological_sort(g) if nx.is_directed_acyclic_graph(g) else g.nodes:
        succ = sorted(g.successors(n))
        out.append(f"  {n} -> {', '.join(succ) if succ else '(base relations only)'}")
    return "\n".join(out)


def to_dot(m3) -> str:
    """The dependency graph in Graphviz DOT (written by hand: pydot/pygraphviz are not deps)."""
    g = dependency_graph(m3)
    lines = ["digraph views {", "  rankdir=LR;"]
    for n, data in g.nodes(data=True):
        shape = "doubleoctagon" if data.get("role") == "query" else "box"
        lines.append(f'  "{n}" [shape={shape}, label="{n}[{data.get("keys", "")}]"];')
    for a, b in g.edges:
        lines.append(f'  "{a}" -> "{b}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
