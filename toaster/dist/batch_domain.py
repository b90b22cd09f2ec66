"""Re-evaluations restricted to a batch domain (Hot Dog §3.2.2, applied to the distributed plan).

A batch trigger may re-evaluate a driver scalar over a partitioned view, e.g. TPC-H Q17's
LINEITEM trigger:

    Q[] := AggSum([], M[pk, q] * nested(pk, q))          (nested reads N1[pk], N2[pk])

which scans the whole view each batch: O(state). When the sum splits by one variable `pk`
(every map the body reads is keyed by pk, no nested sum adds over pk) and the trigger changes
those maps only at the batch's pk values, only those groups change, so

    Q[] += -AggSum([], DOM[pk] * body)       before the first update of a map the body reads
    Q[] +=  AggSum([], DOM[pk] * body)       where the := was

computes the same Q in O(batch) (the domain's keys, each read through the views' indexes).
DOM[pk] is a lift (multiplicity 1 per key) over the union of the keys of the updates' batch
aggregates (`_batch_part`), one existence lift per distinct aggregate: a superset of the keys
the trigger changes. Placement Scatters those aggregates by pk and forms the domain where the
views lie (`placement._self_partitioned`): the batch's input block stays linear and the views
never come to the driver. Q's old value is the definition's value (every trigger maintains it), so the two
terms are exact up to float rounding.
"""
from __future__ import annotations

from dataclasses import replace

from toaster.calculus import ir as C
from toaster.calculus.simplify import subst
from toaster.dist.ir import Dist, Local, map_names


def _body(rhs):
    """The statement's sum terms (outer keyless aggregates stripped)."""
    while isinstance(rhs, C.AggSum) and not rhs.group:
        rhs = rhs.expr
    return list(rhs.terms) if isinstance(rhs, C.Sum) else [rhs]


def _split_var(terms, tags: dict):
    """The variable every term's sum splits by, or None: every map reference has it at its
    (single) partition position, no relation or batch is read, and every nested aggregate keeps
    it as a group variable or takes it bound from outside."""
    v = None
    for t in terms:
        for n in C.subterms(t):
            if isinstance(n, (C.Rel, C.DeltaRel, C.Extremum)):
                return None
            if isinstance(n, C.MapRef):
                tag = tags.get(n.name)
                if not isinstance(tag, Dist) or len(tag.parts) != 1:
                    return None
                here = n.vars[tag.parts[0]]
                if v is None:
                    v = here
                elif here != v:
                    return None
    if v is None:
        return None
    for t in terms:
        if v not in C.schema(t, set())[1]:
            return None
        for n in C.subterms(t):
            if isinstance(n, C.AggSum) and n is not t and v not in n.group:
                if v in C.all_vars(n.expr) and v not in C.schema(n, set())[0]:
                    # v aggregated away inside: bound from outside only if the enclosing
                    # product binds it first, which schema of the node alone cannot tell
                    if not _bound_before(t, n, v):
                        return None
    return v


def _bound_before(term, node, v) -> bool:
    """Whether v is bound (by an earlier factor of an enclosing product) where node is evaluated."""
    def go(e, bound):
        if e is node:
            return v in bound
        match e:
            case C.Prod(fs):
                b = set(bound)
                for f in fs:
                    r = go(f, b)
                    if r is not None:
                        return r
                    b |= C.schema(f, b)[1]
            case C.Sum(fs):
                for f in fs:
                    r = go(f, bound)
                    if r is not None:
                        return r
            case C.AggSum(_, q) | C.Lift(_, q) | C.Extremum(_, _, _, q):
                return go(q, bound)
        return None
    return bool(go(term, set()))


def _ref_positions(terms, v) -> dict:
    """map -> the key position where the body reads v (None when it differs between refs)."""
    out: dict = {}
    for t in terms:
        for n in C.subterms(t):
            if isinstance(n, C.MapRef):
                pos = n.vars.index(v)
                out[n.name] = pos if out.get(n.name, pos) == pos else None
    return out


def _body_terms(rhs):
    """A write's sum terms, all aggregates stripped (the caller regroups by the write's keys)."""
    while isinstance(rhs, C.AggSum):
        rhs = rhs.expr
    if isinstance(rhs, C.Sum):
        return [x for t in rhs.terms for x in _body_terms(t)]
    return [rhs]


def _batch_part(term, keys, v):
    """The batch's own aggregate in a write's term, grouped by the write's keys it binds: the
    term is 0 wherever that is (the views it is joined with only multiply), so its keys are a
    superset of the keys the term changes. It is linear in the batch, so the input block stays
    linear (read by the executors) and its keys are formed on the workers after the Scatter.
    None unless it exists and binds v, or when a value factor would have to be dropped."""
    factors = list(term.factors) if isinstance(term, C.Prod) else [term]
    deltas = [f for f in factors if isinstance(f, C.DeltaRel)]
    dvars = set().union(*(set(d.vars) for d in deltas)) if deltas else set()
    keep = []
    for f in factors:
        if isinstance(f, C.DeltaRel):
            keep.append(f)
        elif isinstance(f, C.Value):
            if not C.all_vars(f) <= dvars:
                return None         # a weight that could cancel: keep the rescan
            keep.append(f)
        elif isinstance(f, C.Cmp):
            if C.all_vars(f) <= dvars:
                keep.append(f)      # a filter dropped only widens the domain
        elif isinstance(f, C.MapRef):
            continue                # a view multiplies: zero stays zero
        else:
            return None
    group = tuple(k for k in keys if k in dvars)
    if len(deltas) != 1 or v not in group:        # a batch self-join is no linear aggregate
        return None
    return C.AggSum(group, C.mk_prod(keep))


def _rewrite(stmts: list, i: int, tags: dict):
    """(statements, index of the negative term) with statement i restricted, or None."""
    st = stmts[i]
    if st.op != ":=" or st.keys or st.target in map_names(st.rhs):
        return None
    terms = _body(st.rhs)
    v = _split_var(terms, tags)
    if v is None:
        return None
    read = _ref_positions(terms, v)
    if None in read.values():
        return None
    writes = [j for j in range(i) if stmts[j].target in read]
    if not writes:
        return None
    first = writes[0]
    written_between = {stmts[j].target for j in range(first, i)}
    parts = []
    for j in writes:
        w = stmts[j]
        key = w.keys[read[w.target]]
        if w.op != "+=" or map_names(w.rhs) & written_between or (key != v and v in w.keys):
            return None
        keys = tuple(v if k == key else k for k in w.keys)
        rhs = subst(w.rhs, {key: v}) if key != v else w.rhs
        for t in _body_terms(rhs):
            batch = _batch_part(t, keys, v)
            if batch is None:
                return None
            parts.append(batch)
    parts = [C.AggSum((v,), C.Lift(C.Var(f"__ex{k + 1}_{v.name}", C.expr_type(b)), b))
             for k, b in enumerate(dict.fromkeys(parts))]
    dom = C.Lift(C.Var(f"__dom_{v.name}", C.INT), C.mk_sum(parts))
    old = C.AggSum((), C.mk_sum([C.mk_prod([C.Value(C.Const(-1, C.INT)), dom, t]) for t in terms]))
    new = C.AggSum((), C.mk_sum([C.mk_prod([dom, t]) for t in terms]))
    out = list(stmts)
    out[i] = replace(st, op="+=", rhs=new)
    out.insert(first, replace(st, op="+=", rhs=old))
    return out, first


def restrict_rescans(prog, tags: dict):
    """The program with every restrictable re-evaluation of a driver scalar split into its
    batch-domain terms; and the rewritten statements (their nested aggregates may run on the
    workers although later statements write the maps they read: the terms are evaluated in
    statement order inside one distributed block)."""
    triggers, marked = [], set()
    for trig in prog.triggers:
        if trig.event.kind != "batch":
            triggers.append(trig)
            continue
        stmts = list(trig.statements)
        i = 0
        while i < len(stmts):
            st = stmts[i]
            done = None
            if isinstance(tags.get(st.target), Local):
                done = _rewrite(stmts, i, tags)
            if done is not None:
                stmts, first = done
                marked.add(id(stmts[first]))
                i += 1                       # the := statement moved one down
                marked.add(id(stmts[i]))
            i += 1
        triggers.append(replace(trig, statements=tuple(stmts)))
    return replace(prog, triggers=tuple(triggers)), marked
