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


def explain(m3, notes=()) -> str:
    """The maps, triggers, decisions (the M3 passes' notes, after `notes` of earlier stages) and
    dependency graph of an M3 program."""
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
    decisions = tuple(notes) + tuple(m3.notes)
    if decisions:
        out += ["", "decisions:"] + [f"  {n}" for n in dict.fromkeys(decisions)]   # each once
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


def draw_graph(m3, path: str) -> None:
    """Draw the view graph as a picture (PNG, SVG or PDF by the file's suffix) with matplotlib:
    query maps on the left, each map's maintenance pointing at the maps it reads."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from toaster.errors import UnsupportedError
        raise UnsupportedError("drawing the view graph needs matplotlib (pip install 'toaster[bench]')") from None
    g = dependency_graph(m3)
    layers = {}
    for depth, names in enumerate(nx.topological_generations(g) if nx.is_directed_acyclic_graph(g) else [g.nodes]):
        for n in names:
            layers[n] = depth
    nx.set_node_attributes(g, layers, "layer")
    pos = nx.multipartite_layout(g, subset_key="layer")
    labels = {n: f"{n}\n[{_short_keys(d['keys'])}]" for n, d in g.nodes(data=True)}
    colors = ["#f4b183" if d.get("role") == "query" else "#9dc3e6" for _, d in g.nodes(data=True)]
    width = max(len(x) for x in (labels.values() or [""])) * 0.07
    fig, ax = plt.subplots(figsize=(2 + (width + 1.5) * (max(layers.values(), default=0) + 1), 1.5 + 1.0 * len(g)))
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=500, node_shape="s")
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=14, node_size=500, node_shape="s")
    nx.draw_networkx_labels(g, {n: (x, y - 0.09) for n, (x, y) in pos.items()}, labels, ax=ax,
                            font_size=8, verticalalignment="top")
    ax.margins(x=0.3, y=0.15)
    ax.set_axis_off()
    ax.set_title("views: a map -> the maps its maintenance reads (query maps in orange)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _short_keys(keys: str) -> str:
    parts = [k.strip() for k in keys.split(",") if k.strip()]
    return ", ".join(parts) if len(parts) <= 2 else f"{parts[0]}, ... {len(parts)} keys"
