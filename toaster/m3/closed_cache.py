"""Closed nested aggregates cached as scalar maps (part of 'm3_view_cache', tuple mode).

PSP's re-evaluation, decomposed (view_cache.decompose), is a sum of products of closed sums,
each over one book:

    PSP[] := (Σ_a PSP_mASKS3[a] * {a > 0.0001 * ASKS_total}) * (Σ_b PSP_mBIDS4[b] * {b > ...}) + ...

A BIDS event changes no ASKS map, yet each of its triggers walks both books: four loops per
event where two are new. A closed sum E (no free variable) over maps that some trigger reads but
does not write is kept in a scalar map X[] (a view cache with no key):

    triggers that write a map E reads:   X[] := E   right after their last such write; later
                                         statements read X[] instead of E
    the other triggers that read E:      X[] instead of E (E cannot have changed since)

Only a sum that every trigger changing it evaluates anyway, unconditionally, after its writes is
kept, so no trigger evaluates more than before. X[] = E holds on the empty database (E has a map
factor, so it is 0 there: on the first event both are 0) and after every trigger (each trigger
that can change E sets X[] to it), so each reader gets the value it would have computed, bit for
bit (the same loop over the same maps).
X is an M3 map like any other, so every engine maintains it, the undo log restores it with the
rest and checkpoints carry it. Programs with static tables are left alone (a table's rows are
loaded into maps without triggers).
"""
from __future__ import annotations

from toaster.calculus.ir import AggSum, Extremum, Lift, MapRef, Prod, Sum, expr_type, schema, subterms
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger


def _maps(e) -> set:
    return {s.name for s in subterms(e) if isinstance(s, MapRef)}


def _zero_when_empty(e) -> bool:
    """Whether e is 0 whenever every map is empty."""
    match e:
        case MapRef():
            return True
        case AggSum(_, q):
            return _zero_when_empty(q)
        case Prod(fs):
            return any(_zero_when_empty(f) for f in fs)
        case Sum(ts):
            return all(_zero_when_empty(t) for t in ts)
    return False


def _closed_sums(e):
    """Maximal-first closed AggSums over maps nested in e (pre-order)."""
    for s in subterms(e):
        if isinstance(s, AggSum) and not s.group and _maps(s) and not schema(s)[0] and _zero_when_empty(s):
            yield s


def _evaluates_after_writes(trigger, e) -> bool:
    """Whether trigger writes no map E reads, or reads E after its last such write (so keeping
    X[] = E there costs no evaluation it did not do: MST's ASKS triggers read their own book
    through range indexes and never evaluate the closed sums its BIDS triggers loop over)."""
    maps = _maps(e)
    last = max((i for i, s in enumerate(trigger.statements) if s.target in maps), default=None)
    return last is None or any(_always_evaluated(s.rhs, e) for s in trigger.statements[last + 1:])


def _always_evaluated(rhs, e) -> bool:
    """Whether evaluating rhs evaluates e whatever the maps hold: e reached through sums and
    products of closed sums only (PSP's `(A * B) + (C * D)`), never under a condition or inside a
    loop over a map (MST reads its sums only in a fallback guarded by `{__rix_bad != 0}`)."""
    if rhs == e:
        return True
    match rhs:
        case AggSum(gs, q) if not gs:
            return _always_evaluated(q, e)
        case Sum(ts):
            return any(_always_evaluated(t, e) for t in ts)
        case Prod(fs):
            if all(isinstance(f, AggSum) and not f.group and not schema(f)[0] for f in fs):
                return any(_always_evaluated(f, e) for f in fs)
    return False


def _replace(e, table: dict):
    if e in table:
        return table[e]
    match e:
        case Prod(fs):
            return Prod(tuple(_replace(f, table) for f in fs))
        case Sum(ts):
            return Sum(tuple(_replace(t, table) for t in ts))
        case AggSum(gs, q):
            return AggSum(gs, _replace(q, table))
        case Lift(v, q):
            return Lift(v, _replace(q, table))
        case Extremum(kind, gs, term, q):
            return Extremum(kind, gs, term, _replace(q, table))
    return e


def _definition(e, decls: dict):
    """e with each map read replaced by its definition (over base relations), variables renamed apart."""
    from toaster.m3.view_cache import _map_definition
    refs = [s for s in subterms(e) if isinstance(s, MapRef)]
    table = {r: _map_definition(decls[r.name], r, f"__K{i}_") for i, r in enumerate(dict.fromkeys(refs))}
    return _replace(e, table)


def cache_closed_sums(prog: M3Program) -> M3Program:
    if prog.mode != "tuple" or any(r.kind != "stream" for r in prog.relations):
        return prog
    decls = {m.name: m for m in prog.maps}
    written = [{s.target for s in t.statements} for t in prog.triggers]
    chosen: dict = {}                   # E -> MapDecl of X
    for t, w in zip(prog.triggers, written):
        for s in t.statements:
            if s.op != ":=":
                continue
            for e in _closed_sums(s.rhs):
                if e in chosen or _maps(e) & w or not _maps(e) <= set(decls):
                    continue
                if any(isinstance(x, MapRef) and x.name in {d.name for d in chosen.values()} for x in subterms(e)):
                    continue
                if any(e in set(subterms(c)) for c in chosen):
                    continue            # inside a sum already cached
                if not all(_evaluates_after_writes(t2, e) for t2 in prog.triggers if t2.event.kind != "ready"):
                    continue            # some trigger would evaluate E where it did not before
                name = _fresh(f"{s.target}_closed{len(chosen) + 1}", decls, chosen)
                chosen[e] = MapDecl(name, (), expr_type(e), _definition(e, decls))
    if not chosen:
        return prog
    triggers = []
    for t, w in zip(prog.triggers, written):
        stmts = list(t.statements)
        for e, decl in chosen.items():
            ref = MapRef(decl.name, (), decl.type)
            last = max((i for i, s in enumerate(stmts) if s.target in _maps(e)), default=None)
            if last is None:
                stmts = [Statement(s.target, s.keys, s.op, _replace(s.rhs, {e: ref})) for s in stmts]
                continue
            after = [Statement(s.target, s.keys, s.op, _replace(s.rhs, {e: ref})) for s in stmts[last + 1:]]
            stmts = stmts[:last + 1] + [Statement(decl.name, (), ":=", e)] + after
        triggers.append(Trigger(t.event, tuple(stmts)))
    notes = tuple(f"{d.name}[]: the closed sum over {', '.join(sorted(_maps(e)))}, kept by the triggers that "
                  "change it and read by the others" for e, d in chosen.items())
    return M3Program(prog.relations, prog.maps + tuple(chosen.values()), tuple(triggers), prog.queries,
                     prog.mode, notes=prog.notes + notes)


def _fresh(name: str, decls: dict, chosen: dict) -> str:
    taken = set(decls) | {d.name for d in chosen.values()}
    n, out = 1, name
    while out in taken:
        n += 1
        out = f"{name}_{n}"
    return out
