"""toaster.calculus.toposort answers as networkx does (it replaces it on the compile path)."""
import random

import networkx as nx
import pytest

from toaster.calculus.toposort import CycleError, connected_components, lexicographic_topological_order


def _graphs(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(0, 9)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 12))] if n else []
        if rng.random() < 0.7:          # mostly acyclic, as the compiler's graphs are
            edges = [(min(a, b), max(a, b)) for a, b in edges if a != b]
        keys = [rng.choice([(0, "a"), (1, "b"), (0, "c"), (2, "")]) for _ in range(n)]
        yield n, edges, keys


@pytest.mark.parametrize("seed", range(4))
def test_same_order_and_components_as_networkx(seed):
    for n, edges, keys in _graphs(seed, 300):
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(edges)
        for key in (None, keys.__getitem__):
            try:
                want = list(nx.lexicographical_topological_sort(g, key=key))
            except nx.NetworkXUnfeasible:
                want = "cycle"
            try:
                got = lexicographic_topological_order(n, edges, key=key)
            except CycleError:
                got = "cycle"
            assert got == want, (n, edges)
        u = nx.Graph()
        u.add_nodes_from(range(n))
        u.add_edges_from(edges)
        want_comps = sorted((sorted(c) for c in nx.connected_components(u)), key=lambda c: c[0])
        assert connected_components(n, edges) == want_comps


def test_cached_hash_is_the_dataclass_hash():
    from toaster.calculus.ir import Var, Prod, Rel
    from toaster.types import INT
    v = Var("x", INT)
    assert hash(v) == hash(("x", INT)) and hash(v) == hash(v)
    p = Prod((Rel("R", (v,)),))
    assert hash(p) == hash(((Rel("R", (Var("x", INT),)),),)) and p == Prod((Rel("R", (Var("x", INT),)),))
