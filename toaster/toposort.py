"""Topological order of a small graph given as successor sets, the smallest ready node first.

    lexicographic_topological_order([{1}, set(), {1}])              -> [0, 2, 1]
    lexicographic_topological_order(succ, key=lambda i: names[i])   -> ready nodes by key, then index

The same order as networkx's lexicographical_topological_sort on a graph whose nodes 0..n-1 were
added in order, without importing networkx (about 0.1 s of every compiling process).
"""
from __future__ import annotations

import heapq


def lexicographic_topological_order(succ, key=None) -> list | None:
    """Nodes 0..len(succ)-1 so that i comes before every j in succ[i], always taking the ready
    node of the smallest (key(i), i); None if the graph has a cycle."""
    indegree = [0] * len(succ)
    for targets in succ:
        for j in targets:
            indegree[j] += 1
    entry = (lambda i: (i,)) if key is None else (lambda i: (key(i), i))
    ready = [entry(i) for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)[-1]
        order.append(i)
        for j in succ[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, entry(j))
    return order if len(order) == len(succ) else None
