"""Which columns of a batch's delta map an imperative batch trigger needs (Hot Dog §5's
projected delta, decided on the lowered program).

The engine leaves a column no statement needs unconverted (every row reads 0 there), so rows
that differ only in such columns merge in DELTA_<R>, their multiplicities added. That is
invisible to a statement when

* every loop over the delta uses a row's multiplicity linearly (summed, scaled), and
* a column that only flows into the key of a temporary map is needed only when some reader of
  that temporary needs that key position (traced through chains of temporaries: TPC-H Q4's
  EXISTS groups the delta by all 16 LINEITEM columns, then reads 3 of them);
  merged rows merge those temporaries' entries alike, so a temporary whose entries may merge
  must, again, have its values used linearly, or -- a loop counting entries (`+= 1`, the
  lowered domain of a lift) -- only feed temporaries whose values nobody reads (their key
  sets are all that matters, and merging keeps the keys whose projected delta is not zero,
  the only ones where a statement's change can be non-zero).

Anything else keeps every column of the map concerned (and so, through the keys written to it,
of the maps feeding it).
"""
from __future__ import annotations

import dataclasses

from toaster.imperative.ir import (Assign, BinOp, Cast, Declare, ForEach, LocalRef, MapAdd, MapClear, MapGet, MapSet)

_LINEAR_OPS = ("+", "-", "*")


def delta_columns_needed(body, relation: str, ncols: int, program=None) -> list | None:
    from toaster.calculus.maps import delta_map_name
    delta = delta_map_name(relation)
    loops: list[ForEach] = []
    if not _collect(body, delta, loops):
        return None                        # read or written other than by a loop over it
    temps = _private_temporaries(body, program)
    tracked = {delta: ncols}
    for loop in loops:
        if loop.map in temps:
            tracked.setdefault(loop.map, len(loop.pattern))
    uses = {id(loop): _uses(loop.body) for loop in loops}
    dead = _value_dead(loops, uses, tracked, delta)
    need = {m: [False] * n for m, n in tracked.items()}
    changed = True
    while changed:
        changed = False
        for loop in loops:
            if loop.map not in tracked:
                continue
            row, u = need[loop.map], uses[id(loop)]
            for j, (bound, var) in enumerate(zip(loop.pattern, loop.key_vars)):
                if row[j] or not (bound is not None or (var is not None and _needed(u.get(var.name, ()), need))):
                    continue
                row[j] = changed = True
            if not all(row) and not _merge_safe(loop, u, tracked, dead):
                need[loop.map] = [True] * len(row)
                changed = True
    return need[delta][:ncols]


def _needed(contexts, need) -> bool:
    for ctx in contexts:
        if ctx[0] != "key" or ctx[1] not in need or need[ctx[1]][ctx[2]]:
            return True
    return False


def _merge_safe(loop: ForEach, uses: dict, tracked: dict, dead: dict) -> bool:
    """Whether entries of the loop's map may merge (rows added) without any statement seeing it:
    the entry's value is used linearly, and every effect of the body carries it -- except
    adds to value-dead temporaries, whose key sets are all that is read (a loop counting
    entries, `+= 1`, the lowered domain of a lift)."""
    v = loop.value_var.name
    if any(ctx[0] not in ("val", "lin") for ctx in uses.get(v, ())):
        return False
    declared = {n.var.name for n in _nodes(loop.body) if isinstance(n, Declare)}
    carries = {v}             # v and the body's locals computed from it
    grew = True
    while grew:
        grew = False
        for n in _nodes(loop.body):
            if isinstance(n, (Assign, Declare)) and n.var.name in declared and n.var.name not in carries \
                    and _names(n.value if isinstance(n, Assign) else n.init) & carries:
                carries.add(n.var.name)
                grew = True
    for n in _nodes(loop.body):
        if isinstance(n, MapSet):
            return False
        if isinstance(n, MapAdd) and not _names(n.value) & carries \
                and not (n.map in tracked and dead.get(n.map, False)):
            return False
        if isinstance(n, Assign) and n.var.name not in declared and not _names(n.value) & carries:
            return False          # an accumulator outside the loop counting entries
    return True


def _value_dead(loops, uses, tracked, delta) -> dict:
    """Temporaries whose values no statement reads (greatest fixed point)."""
    dead = {m: m != delta for m in tracked}
    changed = True
    while changed:
        changed = False
        for loop in loops:
            if not dead.get(loop.map):
                continue
            for ctx in uses[id(loop)].get(loop.value_var.name, ()):
                if not (ctx[0] == "val" and dead.get(ctx[1], False)):
                    dead[loop.map] = False
                    changed = True
                    break
    return dead


def _collect(x, delta: str, loops: list) -> bool:
    """Every ForEach (nested too) into `loops`; False when `delta` is used other than looped."""
    stack = [x]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, ForEach):
            loops.append(x)
            stack.extend(x.pattern)
            stack.append(x.body)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            if getattr(x, "map", None) == delta:
                return False
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
    return True


def _private_temporaries(body, program) -> set:
    """Temp maps that only this trigger touches, only by clears, adds and loops."""
    if program is None:
        return set()
    temps = {m.name for m in program.maps if m.kind == "temp"}
    here, elsewhere, bad = set(), set(), set()
    for t in program.triggers:
        mine = t.body is body
        for node in _nodes(t.body):
            m = getattr(node, "map", None)
            if m not in temps:
                continue
            (here if mine else elsewhere).add(m)
            if mine and isinstance(node, (MapGet, MapSet)):
                bad.add(m)
    return here - elsewhere - bad


def _nodes(x):
    stack = [x]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            yield x
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))


def _writes(body) -> set:
    return {n.map for n in _nodes(body) if isinstance(n, (MapAdd, MapSet, MapClear))}


def _uses(body) -> dict:
    """name -> contexts of its occurrences in a loop body: ('key', map, i) as the i-th key of a
    MapAdd, ('val', map) linearly in a MapAdd's value, ('lin',) linearly in an accumulator declared
    outside the body (a sum over the loop), ('other',) anywhere else; a local of the body
    computed linearly from it passes on the local's contexts."""
    out: dict = {}
    declared = {n.var.name for n in _nodes(body) if isinstance(n, Declare)}

    def note(name, ctx):
        out.setdefault(name, []).append(ctx)

    def expr(e, ctx):
        if isinstance(e, LocalRef):
            note(e.name, ctx)
        elif isinstance(e, BinOp) and e.op in _LINEAR_OPS:
            expr(e.left, ctx)
            expr(e.right, ctx)
            if e.op == "*":   # linear in a name only if one side mentions it
                for name in _names(e.left) & _names(e.right):
                    note(name, ("other",))
        elif isinstance(e, Cast):
            expr(e.arg, ctx)
        else:
            _others(e, set(), note)

    def stmts(xs):
        for s in xs:
            if isinstance(s, MapAdd):
                for i, k in enumerate(s.keys):
                    if isinstance(k, LocalRef):
                        note(k.name, ("key", s.map, i))
                    else:
                        _others(k, set(), note)
                expr(s.value, ("val", s.map))
            elif isinstance(s, (Assign, Declare)):
                # a local of the body passes its uses on; one from outside sums over the loop
                local = ("lin", s.var.name) if s.var.name in declared else ("lin",)
                expr(s.value if isinstance(s, Assign) else s.init, local)
            elif isinstance(s, ForEach):
                for p in s.pattern:
                    _others(p, set(), note)
                stmts(s.body)
            elif hasattr(s, "then"):          # If
                _others(s.cond, set(), note)
                stmts(s.then)
                stmts(s.orelse)
            else:
                _others(s, set(), note)
    stmts(body)
    return {name: _through_locals(name, out, set()) for name in out}


def _through_locals(name: str, raw: dict, seen: set) -> list:
    """A name's contexts, a local computed linearly from it standing for the local's contexts
    (`acc = acc + v`: v is as linear as acc's uses)."""
    seen.add(name)
    out = []
    for ctx in raw.get(name, ()):
        if ctx[0] == "lin" and len(ctx) > 1:
            if ctx[1] not in seen:
                out.extend(_through_locals(ctx[1], raw, seen) or [("lin",)])
        else:
            out.append(ctx)
    return out


def _names(e) -> set:
    return {n.name for n in _nodes(e) if isinstance(n, LocalRef)}


def _others(e, skip: set, note) -> None:
    for n in _nodes(e):
        if isinstance(n, LocalRef) and n.name not in skip:
            note(n.name, ("other",))
