"""Pass 'm3_to_dist': partitioning choice and location tagging (Hot Dog §4.1-4.2). The
partitioning choice and the view copies are in partitioning.py, the one-row driver values
Broadcast to partitioned views in scalar_broadcast.py.

Partitioning (overridable with options.extra['partitioning'] = {map: [key positions] | 'local'}):
keyless maps live on the driver (Local); every other map is Dist on the key position most
often bound by the batch where statements read (or else write) the map, so the batch can be
scattered to the map instead of moving the map.

Tagging: each statement is split into its sum terms, and each term (a product, evaluated left
to right) is placed:
  * the Local data factors (the batch, Local maps, nested aggregates over them) form a local
    group evaluated on the driver;
  * Dist maps are joined on the workers in stages: the intermediate result moves
    (Scatter / Repart) to the partitioning of the next map, or, when it lacks that map's
    partition variables, the map is Reparted onto the intermediate's partitioning;
  * at the root the result is brought to the target's location (Gather / Repart / Scatter).
When no such plan exists (or inside nested aggregates) Dist maps are Gathered whole to the
driver: correct, but slow.

A program with no partitioned map (global aggregates such as TPC-H Q6) would run entirely on
the driver. Hot Dog spreads its batch instead (Random): a term that reads only the batch (and
values) is Scattered on the batch columns it uses (a hash of them spreads the batch evenly, and
deterministically, so a retried task gets the same slice), aggregated per partition, and the
partial sums Gathered into the driver's view, all in one job (option `random_batch`).

View copies (`view_copies`): where a batch joins a view only on a key it is not partitioned by,
the view is kept a second time partitioned by that key (updated beside it) instead of being
Reparted whole to the batch every time.

The output is well formed but naive (e.g. it Reparts a result
already partitioned right); 'dist_simplify' removes the redundant transformers.
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.m3.ir import M3Program, Statement
from toaster.errors import UnsupportedError
from dataclasses import dataclass

from toaster.passes import Pass, register
from toaster.dist.batch_domain import restrict_rescans
from toaster.dist.partitioning import (choose_partitioning, parse_partitioning,  # noqa: F401 (re-exported)
                                      partitioning_items, view_copies)
from toaster.dist.scalar_broadcast import one_row as _one_row, reads_batch as _reads_batch, \
    scatter_batch_sums as _scatter_batch_sums
from toaster.dist.replication import BROADCAST_SHARE, broadcast_relations, broadcastable, choose_replicated
from toaster.dist.ir import (LOCAL, REPLICATED, Local, Dist, Replicated, Repart, Scatter, Gather, Broadcast,
                             DistMap, DistStatement,
                                            Block, DistTrigger, DistProgram, map_ref_tag,
                                            map_names)


# -------------------------------------------------------------------- placing

def _terms(rhs) -> list:
    while isinstance(rhs, C.AggSum):
        rhs = rhs.expr
    if isinstance(rhs, C.Sum):
        out = []
        for t in rhs.terms:
            out += _terms(t)
        return out
    return [rhs]


def _gather_dist_maps(e, maps: dict):
    """Wrap every Dist map reference inside e in Gather (whole-map fallback)."""
    match e:
        case C.MapRef() if isinstance(maps[e.name].tag, Replicated):
            raise UnsupportedError(f"a replicated view ({e.name}) read where no partition's copy can stand for it")
        case C.MapRef() if not isinstance(maps[e.name].tag, Local):
            return Gather(e)
        case C.Prod(fs):
            return C.Prod(tuple(_gather_dist_maps(f, maps) for f in fs))
        case C.Sum(ts):
            return C.Sum(tuple(_gather_dist_maps(t, maps) for t in ts))
        case C.AggSum(gs, q):
            return C.AggSum(gs, _gather_dist_maps(q, maps))
        case C.Lift(v, q):
            return C.Lift(v, _gather_dist_maps(q, maps))
        case C.Extremum(kind, gs, t, q):
            return C.Extremum(kind, gs, t, _gather_dist_maps(q, maps))
    return e


def _outputs(e) -> set:
    return C.schema(e, set())[1]


def _prod(fs):
    return fs[0] if len(fs) == 1 else C.Prod(tuple(fs))


def _move(parts_vars: tuple, factors: list, tag) -> object:
    """Bring a (closed) product at location `tag` to Dist(parts_vars)."""
    inner = _prod(factors)
    return Scatter(parts_vars, inner) if isinstance(tag, Local) else Repart(parts_vars, inner)


def place_term(term, keys: tuple, target_tag, maps: dict, random_batch: bool = False,
               nested_on_workers: bool = True, broadcast: bool = False, scalars: bool = True):
    """The term rewritten with transformers so that it evaluates at target_tag (a var tag).
    random_batch: a term over the batch alone into a driver map is spread over the workers.
    nested_on_workers: a nested aggregate co-partitioned with the intermediate may be evaluated
    on the workers (_co_partitioned). broadcast: the batch's part may be Broadcast to a map
    partitioned by a key it does not bind (instead of moving the map)."""
    factors = list(term.factors) if isinstance(term, C.Prod) else [term]
    kinds = []
    for f in factors:
        if isinstance(f, C.MapRef) and isinstance(maps[f.name].tag, Dist):
            kinds.append("dist")
        elif isinstance(f, C.MapRef) and isinstance(maps[f.name].tag, Replicated):
            kinds.append("repl")
        elif isinstance(f, (C.MapRef, C.DeltaRel)):
            kinds.append("local")
        elif map_names(f) or any(isinstance(n, C.Rel) for n in C.subterms(f)):
            kinds.append("nested")
        else:
            kinds.append("pure")
    if "dist" in kinds or "repl" in kinds:
        plan = _staged_plan(factors, kinds, maps, nested_on_workers, target_tag, broadcast, scalars)
        if plan is not None:
            expr, tag = plan
            return _to_target(C.AggSum(keys, expr), tag, target_tag)
    elif random_batch and isinstance(target_tag, Local):
        spread = _spread_batch(factors, kinds, keys)
        if spread is not None:
            return Gather(C.AggSum(keys, spread))
    expr = _gather_dist_maps(term, maps)
    return _to_target(C.AggSum(keys, expr) if not isinstance(target_tag, Local) else expr, LOCAL, target_tag)


def _spread_batch(factors, kinds, keys):
    """The product with its batch Scattered on the batch columns the rest uses, or None unless
    it is one batch times pure values (a self-join of the batch cannot be split so)."""
    deltas = [f for f in factors if isinstance(f, C.DeltaRel)]
    if len(deltas) != 1 or any(k not in ("pure", "local") or (k == "local" and f is not deltas[0])
                               for f, k in zip(factors, kinds)):
        return None
    delta = deltas[0]
    used = set(keys)
    for f in factors:
        if f is not delta:
            used |= C.all_vars(f)
    parts = tuple(dict.fromkeys(v for v in delta.vars if v in used))
    if not parts:                       # COUNT(*)-like: one number per batch, nothing to spread
        return None
    return _prod([Scatter(parts, delta) if f is delta else f for f in factors])


def _to_target(expr, tag, target_tag):
    if isinstance(target_tag, Replicated) or isinstance(tag, Replicated):
        if isinstance(target_tag, Replicated) and isinstance(tag, (Local, Replicated)):
            return Broadcast(expr) if isinstance(tag, Local) else expr
        raise UnsupportedError(f"a {tag} expression into a {target_tag} map")
    if isinstance(target_tag, Local):
        return expr if isinstance(tag, Local) else Gather(expr)
    if isinstance(tag, Local):
        return Scatter(target_tag.parts, expr)
    return Repart(target_tag.parts, expr)


def _staged_plan(factors, kinds, maps, nested_on_workers: bool = True, target_tag=None, broadcast: bool = False,
                 scalars: bool = True):
    """(expr, tag) joining the Dist maps on the workers, or None when that needs a Gather.
    Replicated maps join wherever the rest lies (every partition holds them whole), so they come
    last; a batch part alone with them goes to the target's partitioning first."""
    local_group, bound_local, rest, repl = [], set(), [], []
    for f, kind in zip(factors, kinds):
        if kind == "nested" and _lifts_batch(f) and _self_partitioned(f, set(), maps) is not None:
            rest.append((f, kind))      # a batch domain: formed on the workers from linear aggregates
        elif kind == "local" or (kind == "nested" and not _has_dist(f, maps)):
            ins, outs = C.schema(f, bound_local)
            if ins - bound_local:
                return None             # correlated with a Dist factor: no staged plan
            local_group.append(f)
            bound_local |= outs
        else:
            rest.append((f, kind))
    held = None                 # a one-row driver part, Broadcast where the first map lies
    if scalars and local_group and rest and _one_row(local_group):
        held, parts, tag, bound = local_group, [], None, set()
    else:
        parts, tag, bound = list(local_group), (LOCAL if local_group else None), set(bound_local)
    for i, (f, kind) in enumerate(rest):
        if held is not None and isinstance(tag, Dist):
            parts.append(Broadcast(_prod(held)))
            bound |= bound_local
            held = None
        if held is not None and C.schema(f, bound)[0] & bound_local:
            return None             # reads the driver part before any map fixes a partitioning
        if kind == "repl":
            if isinstance(tag, (Dist, Replicated)) or tag is None:    # joins where the rest lies
                parts.append(f)
                tag = tag or REPLICATED
                bound |= set(f.vars)
                continue
            if any(k in ("pure", "nested") and set(f.vars) & C.all_vars(g) - bound for g, k in rest[i + 1:]):
                return None          # a later factor reads what it binds: it cannot move to the end
            repl.append(f)
            continue
        if kind == "dist" and isinstance(tag, Replicated):            # the replicated part joins it in place
            parts.append(f)
            tag = map_ref_tag(f, maps)
            bound |= set(f.vars)
            continue
        if kind == "pure":
            parts.append(f)
            bound |= C.schema(f, bound)[1]
            continue
        if kind == "nested":          # evaluated where the intermediate is, if all it reads is there
            if tag is None and nested_on_workers and (own := _self_partitioned(f, bound, maps)) is not None:
                parts.append(_scatter_local_refs(f, own, maps))   # opens the product where its maps lie
                tag = own
                bound |= C.schema(f, bound)[1]
                continue
            if not nested_on_workers or not _co_partitioned(f, tag, bound, maps, batch=scalars):
                return None
            g = _scatter_batch_sums(f, tag) if _reads_batch(f) else f
            if g is None:
                return None
            parts.append(g)
            bound |= C.schema(f, bound)[1]
            continue
        ftag = map_ref_tag(f, maps)
        fvars = set(f.vars)
        if tag is None:
            parts.append(f)
            tag = ftag
        elif tag == ftag:
            parts.append(f)
        elif set(ftag.parts) <= bound:                  # move the intermediate to the map
            parts = [_move(ftag.parts, parts, tag), f]
            tag = ftag
        elif isinstance(tag, Dist) and set(tag.parts) <= fvars:   # move the map to the intermediate
            parts.append(Repart(tag.parts, f))
        elif isinstance(tag, Local) and (broadcast or (scalars and _one_row(parts))):   # to every partition
            parts = [Broadcast(_prod(parts)), f]
            tag = ftag
        elif isinstance(tag, Local) and bound & fvars:  # move both onto a shared variable
            shared = next(v for v in f.vars if v in bound)
            parts = [Scatter((shared,), _prod(parts)), Repart((shared,), f)]
            tag = Dist((shared,))
        else:
            return None
        bound |= fvars
    if held is not None:
        if not isinstance(tag, Dist):
            return None
        parts.append(Broadcast(_prod(held)))
        bound |= bound_local
    if repl:
        if tag is None:
            tag = REPLICATED
        elif isinstance(tag, Local):
            if isinstance(target_tag, Dist) and set(target_tag.parts) <= bound:
                parts, tag = [Scatter(target_tag.parts, _prod(parts))], target_tag
            elif isinstance(target_tag, Replicated):
                parts, tag = [Broadcast(_prod(parts))], REPLICATED
            else:
                return None
        elif not isinstance(tag, (Dist, Replicated)):
            return None
        for f in repl:
            parts.append(f)
            bound |= set(f.vars)
    return _prod(parts), tag


def _co_partitioned(e, tag, bound: set, maps, batch: bool = False) -> bool:
    """Whether a nested aggregate can be evaluated on each partition of an intermediate at `tag`:
    it reads no base relation, its inputs are bound, and every map it reads is a Dist map
    referenced at the intermediate's partition variables (bound outside, so each partition
    holds every entry the aggregate ranges over). E.g. TPC-H Q17's AVG(quantity) per part key,
    next to the view partitioned by part key. With `batch`, it may also read the batch linearly
    at those variables (TPC-H Q22's order count per customer, old count plus the batch's): the
    caller Scatters the batch there (_scatter_local_refs), so each partition holds those rows."""
    if not isinstance(tag, Dist) or not set(tag.parts) <= bound:
        return False
    if C.schema(e, bound)[0] - bound:
        return False
    body = e.expr if isinstance(e, C.Lift) else e       # the batch summed linearly under the lift
    if batch and _reads_batch(e) and any(isinstance(n, (C.Lift, C.Extremum)) for n in C.subterms(body)):
        return False
    for n in C.subterms(e):
        if isinstance(n, C.Rel) or (isinstance(n, C.DeltaRel) and not (batch and set(tag.parts) <= set(n.vars))):
            return False
        if isinstance(n, C.MapRef) and (isinstance(maps[n.name].tag, Local) or map_ref_tag(n, maps) != tag):
            return False
    return True


def _self_partitioned(e, bound: set, maps):
    """The Dist tag where a leading nested factor can be evaluated partition by partition, or
    None: it needs nothing bound, reads no batch or relation, every map it reads is a Dist map
    referenced at the same partition variable, which it outputs, and every aggregate in it keeps
    that variable (so each partition computes exactly its own keys' rows). E.g. a batch domain
    over scattered batch temps (toaster.dist.batch_domain)."""
    ins, outs = C.schema(e, bound)
    if ins - bound:
        return None
    tag, local_vars = None, []
    for n in C.subterms(e):
        if isinstance(n, (C.Rel, C.Extremum)):
            return None
        if isinstance(n, C.DeltaRel):
            local_vars.append(set(n.vars))
            continue
        if isinstance(n, C.MapRef):
            t = map_ref_tag(n, maps)
            if isinstance(t, Local):
                local_vars.append(set(n.vars))
                continue
            if not isinstance(t, Dist) or (tag is not None and t != tag):
                return None
            tag = t
    if tag is None:          # only batch temps: they are Scattered on the variable all share
        shared = set.intersection(*local_vars) & outs if local_vars else set()
        if len(shared) != 1:
            return None
        tag = Dist((shared.pop(),))
    if not set(tag.parts) <= outs or any(not set(tag.parts) <= vs for vs in local_vars):
        return None
    if any(isinstance(n, C.AggSum) and not set(tag.parts) <= set(n.group) for n in C.subterms(e)):
        return None
    return tag


def _lifts_batch(e) -> bool:
    """Whether e lifts over the batch (not linear in it: the input block could not read it)."""
    return any(isinstance(n, C.Lift) and any(isinstance(m, C.DeltaRel) for m in C.subterms(n.expr)) for n in C.subterms(e))


def _scatter_local_refs(e, tag, maps):
    """e with every largest driver-side part (the batch, its temps) that outputs the partition
    variables Scattered to `tag`."""
    reads_driver = any(isinstance(n, C.DeltaRel) or (isinstance(n, C.MapRef) and isinstance(maps[n.name].tag, Local))
                       for n in C.subterms(e))
    linear = not any(isinstance(n, (C.Lift, C.Extremum)) for n in C.subterms(e))   # the input block stays linear
    if reads_driver and linear and not _has_dist(e, maps) and set(tag.parts) <= _outputs(e):
        return Scatter(tag.parts, e)
    match e:
        case C.Prod(fs):
            return C.Prod(tuple(_scatter_local_refs(f, tag, maps) for f in fs))
        case C.Sum(ts):
            return C.Sum(tuple(_scatter_local_refs(t, tag, maps) for t in ts))
        case C.AggSum(gs, q):
            return C.AggSum(gs, _scatter_local_refs(q, tag, maps))
        case C.Lift(v, q):
            return C.Lift(v, _scatter_local_refs(q, tag, maps))
    return e


def _has_dist(e, maps) -> bool:
    return any(isinstance(n, C.MapRef) and not isinstance(maps[n.name].tag, Local) for n in C.subterms(e))


def place_statement(st: Statement, maps: dict, random_batch: bool = False,
                    later_writes: frozenset = frozenset(), broadcast: bool = False, scalars: bool = True) -> list:
    """The statement's terms placed. `later_writes`: maps the trigger's later statements write; a
    term reading one keeps its nested aggregates on the driver (a partial result made on the
    workers would be moved on after those writes: kept to the plans the block fusion's temp
    bookkeeping is known to order right)."""
    target = maps[st.target]
    target_tag = map_ref_tag(C.MapRef(st.target, st.keys), maps)
    terms = _terms(st.rhs)
    if len(terms) > 1 and st.target in map_names(st.rhs):
        raise UnsupportedError(f"statement for {st.target} reads its own target in a sum (distributed mode)")
    out = []
    for i, term in enumerate(terms):
        op = st.op if i == 0 else "+="
        # a term reading a map the trigger writes later keeps its nested aggregates and one-row
        # driver parts on the driver: a worker-side partial or a Broadcast would be a temp made
        # before that write and read after it (test_no_block_reads_a_temp_made_before_a_write...)
        late = bool(map_names(term) & later_writes)
        rhs = place_term(term, st.keys, target_tag, maps, random_batch,
                         nested_on_workers=not late, broadcast=broadcast, scalars=scalars and not late)
        out.append(DistStatement(Statement(st.target, st.keys, op, rhs), target_tag))
    return out


def block_mode(loc) -> str:
    return "local" if isinstance(loc, Local) else "dist"


@register
@dataclass(frozen=True)
class M3ToDist(Pass):
    """Choose map partitioning and tag statements with locations and transformers (Hot Dog §4.2).

    partitioning: per-map overrides, `MAP:local` (on the driver) or `MAP:0+1` (partitioned by
    those key positions); other maps are partitioned by the key the batch binds most often.
    random_batch: when no map is partitioned, spread the batch over the workers (partial
    aggregates there, one Gather); false: aggregate it on the driver.
    view_copies: keep a second copy of a view, partitioned by the key a batch joins it on, where
    the batch binds none of its partition keys (view_copies()); false: Repart the whole view.
    batch_domains: a driver scalar re-evaluated over views partitioned by the variable its sum
    splits by is updated by the batch's keys only (toaster.dist.batch_domain); false: rescan.
    replicate: keep views that only add batch aggregates whole on every partition, their batches
    Broadcast, where that saves Reparts (choose_replicated); false: partition every view.
    broadcast: relations whose batches may be broadcast (small), e.g. `CUSTOMER,NATION`; `*`: any;
    default: source file at most broadcast_share of the sources' bytes (replication.broadcastable).
    scalar_broadcast: a one-row driver part of a term (lifts of driver scalars, e.g. TPC-H Q22's
    AVG(C_ACCTBAL)) is Broadcast to join a partitioned view where it lies, and a nested
    aggregate reading the batch at the view's partition key runs on the workers (the batch's
    aggregate per key Scattered there); false: such a view is Gathered whole to the driver.
    """
    name = "m3_to_dist"
    takes = "m3"
    gives = "dist"
    description = "partitioning choice and location tags (Hot Dog §4.1-4.2)"
    partitioning: tuple[str, ...] = ()
    random_batch: bool = True
    view_copies: bool = True
    batch_domains: bool = True
    replicate: bool = True
    broadcast: tuple[str, ...] = ()
    broadcast_share: float = BROADCAST_SHARE
    scalar_broadcast: bool = True

    def run(self, prog, options):
        allowed = broadcastable(prog, self.broadcast, self.broadcast_share, options.base_dir)
        return m3_to_dist(prog, parse_partitioning(self.partitioning), self.random_batch, self.view_copies,
                          self.batch_domains, self.replicate, allowed, self.scalar_broadcast)


def m3_to_dist(prog: M3Program, override: dict | None = None, random_batch: bool = True,
               view_copies_on: bool = True, batch_domains: bool = True, replicate: bool = True,
               broadcast=None, scalars: bool = True) -> DistProgram:
    """Choose map partitioning and tag statements with locations and transformers (Hot Dog §4.2).
    `broadcast`: the relations whose batches may be broadcast (replication.broadcastable; None:
    any, the exchange count alone decides). `scalars`: M3ToDist.scalar_broadcast."""
    if prog.mode != "batch":
        raise UnsupportedError("the distributed backend needs a batch-mode M3 program (compile with mode='batch')")
    override = dict(override or {})
    for trig in prog.triggers:
        if trig.event.kind == "ready":
            # initial values are constants set once on the driver (no batch to partition them by)
            for st in trig.statements:
                override.setdefault(st.target, "local")

    def build(replicated: frozenset) -> DistProgram:
        return _place_program(prog, override, random_batch, view_copies_on, batch_domains, replicated, scalars)
    replicated = frozenset()
    if replicate and any(t.event.kind == "batch" for t in prog.triggers):
        replicated = choose_replicated(prog, build, frozenset(override), broadcast)
    return build(replicated)


def _place_program(prog: M3Program, override: dict, random_batch: bool, view_copies_on: bool,
                   batch_domains: bool, replicated: frozenset, scalars: bool = True) -> DistProgram:
    tags = choose_partitioning(prog, override, replicated)
    broadcast = broadcast_relations(prog, replicated)
    copies: dict = {}
    if view_copies_on:
        prog, copies = view_copies(prog, tags, broadcast)
        tags.update((c, Dist((j,))) for c, (_, j) in copies.items())
    restricted: set = set()
    if batch_domains:
        prog, restricted = restrict_rescans(prog, tags)
    random_batch = random_batch and not any(isinstance(t, (Dist, Replicated)) for t in tags.values())
    dmaps = tuple(DistMap(m.name, m.keys, m.type, tags[m.name],
                          copy_of=copies[m.name][0] if m.name in copies else None) for m in prog.maps)
    maps = {m.name: m for m in dmaps}
    triggers = []
    for trig in prog.triggers:
        if trig.event.kind == "ready" and any(not isinstance(tags[st.target], Local) for st in trig.statements):
            raise UnsupportedError("initial map values (ON SYSTEM READY) of a partitioned map on the spark backend")
        if trig.event.kind not in ("batch", "ready"):
            raise UnsupportedError(f"{trig.event.kind} trigger in a batch-mode program")
        blocks = []
        for i, st in enumerate(trig.statements):
            if st.target not in maps:
                raise UnsupportedError(f"statement writes undeclared map {st.target}")
            later = (frozenset() if id(st) in restricted
                     else frozenset(x.target for x in trig.statements[i + 1:]))
            for dst in place_statement(st, maps, random_batch, later, trig.event.relation in broadcast, scalars):
                blocks.append(Block(block_mode(dst.loc), (dst,)))
        triggers.append(DistTrigger(trig.event, tuple(blocks)))
    return DistProgram(prog.relations, dmaps, tuple(triggers), prog.queries, stage="tagged")
