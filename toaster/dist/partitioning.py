"""Partitioning of the distributed program's maps (part of pass 'm3_to_dist', placement.py):
which key position each map is partitioned on (or Local / Replicated), the view copies kept
partitioned by a second key, and the `m3_to_dist{partitioning=...}` option items."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from toaster.calculus import ir as C
from toaster.errors import UnsupportedError, UsageError
from toaster.m3.ir import M3Program, Statement
from toaster.dist.ir import LOCAL, REPLICATED, Dist, map_names
from toaster.dist.replication import broadcast_relations


# ---------------------------------------------------------------- partitioning

def choose_partitioning(prog: M3Program, override: dict, replicated: frozenset = frozenset()) -> dict:
    """map name -> Local() | Dist(key positions) | Replicated(). The batch of a relation that
    updates a `replicated` view is broadcast (every partition gets it): it joins any partition
    where it lies, so its trigger casts no vote."""
    votes = {m.name: Counter() for m in prog.maps}
    broadcast = broadcast_relations(prog, replicated)
    for trig in prog.triggers:
        if trig.event.kind == "batch" and trig.event.relation in broadcast:
            continue
        for st in trig.statements:
            batch_vars = set()
            for node in C.subterms(st.rhs):
                if isinstance(node, C.DeltaRel):
                    batch_vars |= set(node.vars)
            for node in C.subterms(st.rhs):
                if isinstance(node, C.MapRef) and node.name in votes:
                    for i, v in enumerate(node.vars):
                        if v in batch_vars:
                            votes[node.name][i] += 2
            if st.target in votes:
                for i, v in enumerate(st.keys):
                    if v in batch_vars:
                        votes[st.target][i] += 1
    tags = {}
    for m in prog.maps:
        want = override.get(m.name)
        if want is not None:
            if want == "local":
                tags[m.name] = LOCAL
                continue
            parts = tuple(int(p) for p in want)
            if not parts or any(p < 0 or p >= len(m.keys) for p in parts):
                raise UnsupportedError(f"partitioning of {m.name}: key positions {list(parts)} "
                                       f"out of range for {len(m.keys)} keys")
            tags[m.name] = Dist(parts)
        elif not m.keys:
            tags[m.name] = LOCAL
        elif m.name in replicated:
            tags[m.name] = REPLICATED
        else:
            best = max(range(len(m.keys)), key=lambda i: (votes[m.name][i], -i))
            tags[m.name] = Dist((best,))
    for name in override:
        if name not in tags:
            raise UnsupportedError(f"partitioning given for unknown map {name}")
    return tags


# ---------------------------------------------------------------- view copies

def _top_refs(e):
    """MapRefs a statement joins directly (not inside a nested aggregate, which placement gathers)."""
    match e:
        case C.MapRef():
            yield e
        case C.Prod(fs) | C.Sum(fs):
            for f in fs:
                yield from _top_refs(f)
        case C.AggSum(_, q):
            yield from _top_refs(q)


def _rename_ref(e, old: C.MapRef, new: str):
    match e:
        case C.MapRef() if e == old:
            return C.MapRef(new, e.vars, e.type)
        case C.Prod(fs):
            return C.Prod(tuple(_rename_ref(f, old, new) for f in fs))
        case C.Sum(ts):
            return C.Sum(tuple(_rename_ref(t, old, new) for t in ts))
        case C.AggSum(gs, q):
            return C.AggSum(gs, _rename_ref(q, old, new))
    return e


def view_copies(prog: M3Program, tags: dict, broadcast: frozenset = frozenset()) -> tuple[M3Program, dict]:
    """Keep a view a second time, partitioned by another key, where a batch trigger joins it on
    that key only (Hot Dog §4.1 lets a view have several partitionings). Otherwise placement
    Reparts the WHOLE view to the batch's partitioning every such batch: O(state) shuffled per
    batch (TPC-H Q3's CUSTOMER trigger moved all of REVENUE_mORDERS7, keyed by order, to the
    customer key). The copy `M_P<j>` is updated by the same statements as M, right after each
    (so every read sees the same contents as M would), and the joining statements read it
    instead. Only for views whose update statements do not read the view itself.
    Returns the program with the copies and {copy: (source, key position)}."""
    writes: dict = {}
    for trig in prog.triggers:
        for st in trig.statements:
            writes.setdefault(st.target, []).append(st)
    copies: dict = {}            # (source, position) -> copy name
    renamed: dict = {}           # id(statement) -> new statement
    for trig in prog.triggers:
        if trig.event.kind != "batch" or trig.event.relation in broadcast:   # broadcast: joins in place
            continue
        for st in trig.statements:
            batch_vars = {v for node in C.subterms(st.rhs) if isinstance(node, C.DeltaRel) for v in node.vars}
            rhs = st.rhs
            for ref in dict.fromkeys(_top_refs(st.rhs)):
                tag = tags.get(ref.name)
                if not isinstance(tag, Dist) or ref.name not in writes or any(ref.vars[p] in batch_vars for p in tag.parts):
                    continue
                bound = [j for j, v in enumerate(ref.vars) if v in batch_vars and ref.vars.count(v) == 1]
                if not bound or any(ref.name in map_names(w.rhs) for w in writes[ref.name]):
                    continue
                copy = copies.setdefault((ref.name, bound[0]), f"{ref.name}_P{bound[0]}")
                rhs = _rename_ref(rhs, ref, copy)
            if rhs is not st.rhs:
                renamed[id(st)] = Statement(st.target, st.keys, st.op, rhs)
    if not copies:
        return prog, {}
    by_source: dict = {}
    for (source, j), copy in copies.items():
        by_source.setdefault(source, []).append(copy)
    triggers = []
    for trig in prog.triggers:
        stmts = []
        for st in trig.statements:
            new = renamed.get(id(st), st)
            stmts.append(new)
            stmts += [Statement(c, new.keys, new.op, new.rhs) for c in by_source.get(st.target, ())]
        triggers.append(replace(trig, statements=tuple(stmts)))
    decls = {m.name: m for m in prog.maps}
    maps = list(prog.maps)
    for (source, j), copy in copies.items():
        maps.append(replace(decls[source], name=copy, role="aux"))
    return (replace(prog, maps=tuple(maps), triggers=tuple(triggers)),
            {copy: (source, j) for (source, j), copy in copies.items()})


def parse_partitioning(items) -> dict:
    """`MAP:local` or `MAP:0+2` (key positions) items -> {map: 'local' | [positions]}."""
    out = {}
    for item in items:
        name, sep, how = item.partition(":")
        if not sep or not name or not how:
            raise UsageError(f"partitioning {item!r}: expected MAP:local or MAP:POS[+POS...]")
        if how == "local":
            out[name] = "local"
        else:
            try:
                out[name] = [int(x) for x in how.split("+")]
            except ValueError:
                raise UsageError(f"partitioning {item!r}: key positions must be integers") from None
    return out


def partitioning_items(partitioning: dict) -> tuple:
    """{map: 'local' | [positions]} -> the `m3_to_dist{partitioning=...}` option items."""
    out = []
    for name, how in partitioning.items():
        out.append(f"{name}:local" if how == "local" else f"{name}:" + "+".join(str(int(p)) for p in how))
    return tuple(out)
