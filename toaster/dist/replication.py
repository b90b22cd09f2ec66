"""Replicated views and broadcast batches (docs/spark-engine.md, "Q3 in 2 stages").

A view every statement of which adds an aggregate of its batch (and reads no map) can be kept
whole on every partition (location Replicated): the relation's batch aggregate is Broadcast and
every partition applies it to its replica. The broadcast batch then joins any view where it
lies, so its trigger needs no Repart and casts no partitioning vote. `choose_replicated` keeps
the set of such views whose placement (placement.m3_to_dist) needs the fewest exchanges between
dependent stages, among the views whose batches may be broadcast (`broadcastable`: a relation
known small, by a hint or by its source file's size; one of unknown size is presumed large).
"""
from __future__ import annotations

import os
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


BROADCAST_SHARE = 0.05   # default: a batch broadcast is at most 5 % of the query's input (by source size)


def source_sizes(prog: M3Program, base_dir: str | None = None) -> dict:
    """relation -> bytes of its FROM FILE source (relations with a batch trigger), None where there
    is no source or it cannot be read: the statistics the plan has before any data."""
    from toaster.runtime.csv_source import resolve_path
    out = {}
    for trig in prog.triggers:
        if trig.event.kind != "batch" or trig.event.relation in out:
            continue
        decl = next((r for r in prog.relations if r.name == trig.event.relation), None)
        try:
            out[trig.event.relation] = os.path.getsize(resolve_path(decl.source.path, base_dir))
        except (AttributeError, OSError, TypeError):
            out[trig.event.relation] = None
    return out


def broadcastable(prog: M3Program, hint=(), share: float = BROADCAST_SHARE, base_dir: str | None = None) -> frozenset:
    """The relations whose batches may be broadcast (sent whole to every partition and
    pre-aggregated on the driver). `hint` (m3_to_dist{broadcast=CUSTOMER,NATION}): exactly those
    ('*': any relation, the exchange count alone decides). Without a hint, a relation whose source
    file holds at most `share` of the bytes of the sources of every relation with a batch trigger
    (TPC-H Q3's CUSTOMER, ~1.4 % of the stream; not Q10's LINEITEM, ~80 %); a relation with no
    readable source is presumed large, and its bytes unknown make the share of the others the
    share of the known total (an overestimate: never broadcasts a relation known large)."""
    hint = tuple(h.strip().upper() for h in hint if h.strip())
    batch_rels = {t.event.relation for t in prog.triggers if t.event.kind == "batch"}
    if hint:
        return frozenset(batch_rels) if hint == ("*",) else frozenset(hint) & batch_rels
    sizes = source_sizes(prog, base_dir)
    total = sum(v for v in sizes.values() if v is not None)
    return frozenset(r for r, v in sizes.items() if v is not None and total and v <= share * total)


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


def choose_replicated(prog: M3Program, build, fixed: frozenset = frozenset(), allowed=None) -> frozenset:
    """The set of candidate views to replicate whose placement needs the fewest Reparts and
    whole-map Gathers (fewer views on a tie; none unless it saves one). `build(replicated)` places
    the program; an unsupported placement rules the set out. `allowed`: the relations whose
    batches may be broadcast (`broadcastable`; None: any); a view another relation updates stays
    partitioned."""
    cands = [c for c in replica_candidates(prog) if c not in fixed
             and (allowed is None or broadcast_relations(prog, {c}) <= allowed)][:5]
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
