"""Hot Dog's batch pre-processing as an M3 rewrite (pass 'm3_batch_delta', Hot Dog §5).

A batch trigger reads its delta relation `(DELTA R)(c1, .., cn)` keyed by every column, once
per statement. This pass gives each batch trigger, before any of its statements, one
pre-aggregated delta map per distinct use of the delta:

    DELTA_R_k[K] := AggSum(K, (DELTA R)(c1, .., cn) * static conditions * values)

where the conditions and values are the factors of the term that mention only the delta's
columns, and K the columns the rest of the statement needs (join keys, group keys, target
keys). The statements then read DELTA_R_k[K] instead of DELTA R: the batch is filtered,
projected and aggregated once, and a ΔR⋈ΔR self-join term joins two small aggregated maps
instead of nesting loops over the raw batch (BSV: per broker, not per pair of orders).

Terms of one statement target whose pre-aggregated deltas have the same keys and that agree in
everything else (Q3's `price - discount * price`) share one delta map holding the sum of their
local parts, so they become one statement: one walk over the slice, one upsert per match.

Delta maps are transient: `:=` replaces them on every batch, and lower stages treat them as
ordinary maps (their contents between batches are the last batch's and are never read).
A term whose delta occurs below an aggregate, a lift or a sum is left as it is (correct, just
not pre-aggregated).
"""
from __future__ import annotations

from toaster.calculus.ir import (AggSum, Cmp, DeltaRel, Extremum, Lift, MapRef, Prod, Sum, Value, Var, all_vars, expr_type,
                                 mk_prod, mk_sum)
from toaster.m3.hoivm import canonical
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger
from toaster.passes import pass_


def delta_map_prefix(relation: str) -> str:
    return f"DELTA_{relation}_"


def is_delta_map_name(name: str, relations) -> bool:
    """Whether `name` is one of this pass's per-batch maps (DELTA_<R>_<k> for a relation R):
    scratch state, refilled by every batch, that checkpoints need not keep."""
    for r in relations:
        prefix = delta_map_prefix(r)
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return True
    return False


def is_delta_map(decl: MapDecl) -> bool:
    """A map this pass made: its definition reads a batch's delta relation."""
    return _reads_delta(decl.definition)


def _reads_delta(e) -> bool:
    match e:
        case DeltaRel():
            return True
        case AggSum(_, q):
            return _reads_delta(q)
        case Sum(ts) | Prod(ts):
            return any(_reads_delta(t) for t in ts)
    return False


def _factors(e) -> list:
    return list(e.factors) if isinstance(e, Prod) else [e]


def _terms(e) -> list:
    return list(e.terms) if isinstance(e, Sum) else [e]


def _is_constant(f) -> bool:
    return isinstance(f, Value) and not all_vars(f)


class _TriggerRewrite:
    """Rewrites the statements of one batch trigger; collects the delta maps they read."""

    def __init__(self, relation: str, taken: set):
        self.relation = relation
        self.taken = taken                       # map names in use (program-wide)
        self.by_canon: dict[str, MapDecl] = {}   # canonical definition -> delta map
        self.new_maps: list[MapDecl] = []

    def fresh_name(self) -> str:
        i = 1
        while f"{delta_map_prefix(self.relation)}{i}" in self.taken:
            i += 1
        name = f"{delta_map_prefix(self.relation)}{i}"
        self.taken.add(name)
        return name

    def delta_map(self, keys: tuple, body) -> MapRef:
        """A reference to the delta map AggSum(keys, body), made once per distinct definition."""
        definition = AggSum(keys, body)
        canon = canonical(definition, keys)
        decl = self.by_canon.get(canon)
        if decl is None:
            decl = MapDecl(self.fresh_name(), keys, expr_type(definition), definition, "aux")
            self.by_canon[canon] = decl
            self.new_maps.append(decl)
        return MapRef(decl.name, keys, decl.type)

    # ------------------------------------------------------------------ terms
    def split(self, term, outside: set):
        """(rest factors, [(delta keys, local body)]) for one product term, or None when the
        term's delta is not a top-level factor over distinct variables."""
        factors = _factors(term)
        deltas = [f for f in factors if isinstance(f, DeltaRel) and f.name == self.relation]
        if not deltas or any(not all(isinstance(v, Var) for v in d.vars) for d in deltas):
            return None
        others = [f for f in factors if not any(f is d for d in deltas)]
        if any(_reads_delta(f) for f in others):
            return None  # a delta below an aggregate or lift: leave the term alone
        local: dict[int, list] = {i: [] for i in range(len(deltas))}
        rest = []
        for f in others:
            owner = None
            if isinstance(f, (Cmp, Value)) and not _is_constant(f):
                fv = all_vars(f)
                owner = next((i for i, d in enumerate(deltas) if fv <= set(d.vars)), None)
            if owner is None:
                rest.append(f)
            else:
                local[owner].append(f)
        parts = []
        for i, d in enumerate(deltas):
            needed = set(outside)
            for f in rest:
                needed |= all_vars(f)
            for j, e in enumerate(deltas):
                if j != i:
                    needed |= set(e.vars)
            keys = tuple(dict.fromkeys(v for v in d.vars if v in needed))
            parts.append((keys, [d] + local[i]))
        return rest, parts

    def statement(self, st: Statement) -> list:
        """The rewritten statement(s) for one statement of the trigger."""
        if st.op != "+=":
            return [self._plain(st)]
        group, body = (st.rhs.group, st.rhs.expr) if isinstance(st.rhs, AggSum) else (None, st.rhs)
        outside = set(st.keys) | set(group or ())
        kept, merged = [], {}   # merged: (rest, keys of the one delta) -> local bodies summed
        order = []
        for term in self._flat_terms(body, group):
            sp = self.split(term, outside)
            if sp is None:
                kept.append(term)
                continue
            rest, parts = sp
            if len(parts) == 1:
                keys, local = parts[0]
                # constant factors ride along in the delta map so terms differing only in them merge
                consts = [f for f in rest if _is_constant(f)]
                rest = [f for f in rest if not _is_constant(f)]
                slot = (tuple(rest), keys)
                if slot not in merged:
                    merged[slot] = []
                    order.append(slot)
                merged[slot].append(mk_prod(consts + local))
                continue
            refs = [self.delta_map(keys, mk_prod(local)) for keys, local in parts]
            kept.append(mk_prod(refs + rest))
        for slot in order:
            rest, keys = slot
            bodies = merged[slot]
            if len(bodies) == 1:
                # alone: constants stay outside, so equal delta maps of other statements are shared
                factors = _factors(bodies[0])
                consts = [f for f in factors if _is_constant(f)]
                ref = self.delta_map(keys, mk_prod([f for f in factors if not _is_constant(f)]))
                kept.append(mk_prod(consts + [ref] + list(rest)))
            else:
                # each part aggregated to the keys: the parts bind different non-key variables
                summed = mk_sum([AggSum(keys, b) for b in bodies])
                kept.append(mk_prod([self.delta_map(keys, summed)] + list(rest)))
        if len(kept) > 1 and group is not None:
            kept = [AggSum(group, t) for t in kept]  # likewise for the statement's terms
        new_body = mk_sum(kept)
        rhs = AggSum(group, new_body) if group is not None else new_body
        return [Statement(st.target, st.keys, st.op, rhs)]

    def _plain(self, st: Statement) -> Statement:
        return st

    @staticmethod
    def _flat_terms(body, group) -> list:
        """The sum's terms, looking through AggSums over the statement's own group."""
        out = []
        for t in _terms(body):
            if isinstance(t, AggSum) and group is not None and t.group == group:
                out.extend(_TriggerRewrite._flat_terms(t.expr, group))
            else:
                out.append(t)
        return out


def _maps_read(e) -> set:
    match e:
        case MapRef(n, _, _):
            return {n}
        case AggSum(_, q) | Lift(_, q):
            return _maps_read(q)
        case Extremum(_, _, _, q):
            return _maps_read(q)
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= _maps_read(t)
            return out
    return set()


def _body(st: Statement):
    return st.rhs.expr if isinstance(st.rhs, AggSum) else st.rhs


def merge_statements(stmts) -> list:
    """Statements `m[K] += AggSum(G, a)` and, later, `m[K] += AggSum(G, b)` become one
    `m[K] += AggSum(G, a + b)` when moving b's evaluation up to a's place changes nothing: neither
    reads m, and no statement between them writes a map that b reads or reads m."""
    out: list[Statement] = []
    for st in stmts:
        merged = False
        if st.op == "+=" and st.target not in _maps_read(st.rhs):
            reads = _maps_read(st.rhs)
            for i in range(len(out) - 1, -1, -1):
                prev = out[i]
                if (prev.target == st.target and prev.keys == st.keys and prev.op == "+="
                        and isinstance(st.rhs, AggSum) and isinstance(prev.rhs, AggSum)
                        and prev.rhs.group == st.rhs.group
                        and st.target not in _maps_read(prev.rhs)):
                    g = st.rhs.group
                    rhs = AggSum(g, mk_sum([AggSum(g, _body(prev)), AggSum(g, _body(st))]))
                    out[i] = Statement(st.target, st.keys, "+=", rhs)
                    merged = True
                    break
                if prev.target in reads or st.target in _maps_read(prev.rhs) or prev.target == st.target:
                    break
        if not merged:
            out.append(st)
    return out


def batch_delta(program: M3Program) -> M3Program:
    if program.mode != "batch":
        return program
    taken = {m.name for m in program.maps} | {r.name for r in program.relations}
    maps = list(program.maps)
    triggers = []
    for trig in program.triggers:
        if trig.event.kind != "batch":
            triggers.append(trig)
            continue
        rw = _TriggerRewrite(trig.event.relation, taken)
        body = [s for st in merge_statements(trig.statements) for s in rw.statement(st)]
        fills = [Statement(m.name, m.keys, ":=", m.definition) for m in rw.new_maps]
        maps.extend(rw.new_maps)
        triggers.append(Trigger(trig.event, tuple(fills + body)))
    return M3Program(program.relations, tuple(maps), tuple(triggers), program.queries, program.mode,
                     program.notes)


@pass_("m3_batch_delta", "m3")
def m3_batch_delta(program: M3Program, options=None) -> M3Program:
    """Batch deltas filtered, projected and pre-aggregated once per batch (Hot Dog §5)."""
    return batch_delta(program)
