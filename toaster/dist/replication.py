"""Replicated views and broadcast batches (docs/spark-engine.md, "Q3 in 2 stages").

A view every statement of which adds an aggregate of its batch (and reads no map) can be kept
whole on every partition (location Replicated): the relation's batch aggregate is Broadcast and
every partition applies it to its replica. The broadcast batch then joins any view where it
lies, so its trigger needs no Repart and casts no partitioning vote. `choose_replicated` keeps
the set of such views whose placement (placement.m3_to_dist) needs the fewest exchanges between
dependent stages.
"""
from __future__ import annotations

from itertools import combinations

from toaster.calculus import ir as C
from toaster.errors import UnsupportedError
from toaster.m3.ir import M3Program, Statement
from toaster.dist.ir import DistProgram, Repart, Scatter, Gather, Broadcast


def _batch_only(st: Statement) -> bool:
    """A `+=` whose right-hand side reads its batch and no map (so every partition can apply
    the same broadcast batch aggregate)."""
    nodes = list(C.subterms(st.rhs))
    return (st.op == "+=" and any(isinstance(n, C.DeltaRel) for n in nodes)
            and not any(isinstance(n, (C.MapRef, C.Rel)) for n in nodes))


def replica_candidates(prog: M3Program) -> list:
    """Views every statement of which adds a batch aggregate (TPC-H Q3's REVENUE_mCUSTOMER3,
    the BUILDING customers): they can be kept whole on every partition."""
    writes: dict = {}
    for trig in prog.triggers:
        for st in trig.statements:
            ok = trig.event.kind == "batch" and _batch_only(st)
            writes.setdefault(st.target, []).append(ok)
    return [m.name for m in prog.maps if m.keys and getattr(m, "role", "aux") != "query" and writes.get(m.name)
            and all(writes[m.name])]


def broadcast_relations(prog: M3Program, replicated) -> frozenset:
    """Relations whose batches update a replicated view: their batch aggregates are broadcast."""
    return frozenset(trig.event.relation for trig in prog.triggers if trig.event.kind == "batch"
                     and any(st.target in replicated for st in trig.statements))


def _moves(prog: DistProgram) -> int:
    """Reparts and whole-map Gathers: the exchanges between dependent dist stages."""
    count = 0

    def walk(e):
        nonlocal count
        match e:
            case Repart(_, q) | Scatter(_, q) | Broadcast(q):
                count += isinstance(e, Repart)
                walk(q)
            case Gather(q):
                count += isinstance(q, C.MapRef)
                walk(q)
            case C.Prod(fs) | C.Sum(fs):
                for f in fs:
                    walk(f)
            case C.AggSum(_, q) | C.Lift(_, q) | C.Extremum(_, _, _, q):
                walk(q)
    for t in prog.triggers:
        for b in t.blocks:
            for it in b.items:
                walk(it.stmt.rhs)
    return count


def choose_replicated(prog: M3Program, build, fixed: frozenset = frozenset()) -> frozenset:
    """The set of candidate views to replicate whose placement needs the fewest Reparts and
    whole-map Gathers (fewer views on a tie; none unless it saves one). `build(replicated)` places
    the program; an unsupported placement rules the set out."""
    cands = [c for c in replica_candidates(prog) if c not in fixed][:5]
    best, best_key = frozenset(), None
    for r in range(len(cands) + 1):
        for subset in combinations(cands, r):
            try:
                key = (_moves(build(frozenset(subset))), r)
            except UnsupportedError:
                continue
            if best_key is None or key < best_key:
                best, best_key = frozenset(subset), key
    return best
