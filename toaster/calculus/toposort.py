"""The two graph queries the compiler asks on every query, without importing networkx.

networkx costs ~0.13 s of import at every `python -m toaster.pipeline` start (a tenth of a cold
TPC-H Q17 `--run`) for two small questions about graphs of a few dozen nodes. These answer them
exactly as networkx does (`lexicographical_topological_sort` of a DiGraph whose nodes 0..n-1
were added in order, and `connected_components` up to order), so every compiled program is the
same as before; `toaster.m3.explain` keeps networkx for its drawings.
"""
from __future__ import annotations

import heapq


class CycleError(ValueError):
    """The graph has a cycle: no topological order exists."""


def lexicographic_topological_order(n: int, edges, key=None) -> list[int]:
    """The topological order of nodes 0..n-1 under `edges` (pairs a -> b, repeats allowed) that
    always takes the smallest ready node by (key(node), node): networkx's
    `lexicographical_topological_sort` (node ids are the nodes here). Raises CycleError."""
    succ: list[set] = [set() for _ in range(n)]
    indegree = [0] * n
    for a, b in edges:
        if b not in succ[a]:
            succ[a].add(b)
            indegree[b] += 1
    rank = (lambda i: (key(i), i)) if key is not None else (lambda i: (i, i))
    ready = [rank(i) for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        node = heapq.heappop(ready)[1]
        out.append(node)
        for child in succ[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, rank(child))
    if len(out) < n:
        raise CycleError("the graph has a cycle")
    return out


def connected_components(n: int, edges) -> list[list[int]]:
    """The connected components of the undirected graph on nodes 0..n-1, each sorted, in the
    order of their smallest node."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(root(i), []).append(i)
    return sorted(comps.values(), key=lambda c: c[0])
