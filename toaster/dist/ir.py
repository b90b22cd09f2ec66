"""Distributed M3 (Hot Dog §4): location tags, location transformers, statement blocks.

Location tags say where a map or an expression's result lives:
  Local()        on the driver
  Dist(parts)    spread over the workers, hash-partitioned on the key positions `parts`
                 (for a map) or on the variables `parts` (for an expression)
  Random()       on the workers, in no particular partition (partial aggregates)
  Replicated()   on the workers, every partition holding all of it (a small view updated on
                 every partition by the same broadcast batch aggregate; placement.replicated_views)
Location-independent terms (values, comparisons, lifts of values) have no tag (None).

Transformers wrap calculus sub-expressions and are the only way data moves:
  Repart(vars, Q)   Q^{Dist|Random}  -> Q^{Dist(vars)}
  Scatter(vars, Q)  Q^{Local}        -> Q^{Dist(vars)}
  Gather(Q)         Q^{Dist|Random}  -> Q^{Local}
  Broadcast(Q)      Q^{Local}        -> Q^{Replicated}  (every partition gets all of Q)

A DistProgram holds the M3 maps with their tags (and the temp maps introduced by
single-transformer form) and one DistTrigger per batch trigger. Before 'dist_blocks' a
trigger's `blocks` is one block per statement; after it, statements are in single-transformer
form (every transformer reads one materialized map: an Exchange) and fused into blocks:
  Block('local', ...)     statements run on the driver over driver dicts
  Block('dist', ...)      statements run on every worker over its partitions
  Block('exchange', ...)  Exchanges the driver performs (Repart / Scatter / Gather)
The batch itself (DeltaRel) arrives on the driver: it is Local.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus import ir as C
from toaster.calculus.maps import delta_map_name  # noqa: F401  (re-exported)
from toaster.m3.ir import Statement
from toaster.errors import UnsupportedError


# ------------------------------------------------------------------- location tags

@dataclass(frozen=True, slots=True)
class Local:
    def __str__(self) -> str:
        return "Local"


@dataclass(frozen=True, slots=True)
class Dist:
    parts: tuple   # key positions (map tags) or Vars (expression tags)

    def __str__(self) -> str:
        return "Dist(" + ", ".join(p.name if isinstance(p, C.Var) else str(p) for p in self.parts) + ")"


@dataclass(frozen=True, slots=True)
class Random:
    def __str__(self) -> str:
        return "Random"


@dataclass(frozen=True, slots=True)
class Replicated:
    def __str__(self) -> str:
        return "Replicated"


LOCAL, RANDOM, REPLICATED = Local(), Random(), Replicated()


# ---------------------------------------------------------------- transformers

@dataclass(frozen=True, slots=True)
class Repart:
    parts: tuple   # tuple[Var, ...]
    expr: object


@dataclass(frozen=True, slots=True)
class Scatter:
    parts: tuple
    expr: object


@dataclass(frozen=True, slots=True)
class Gather:
    expr: object


@dataclass(frozen=True, slots=True)
class Broadcast:
    expr: object


TRANSFORMERS = (Repart, Scatter, Gather)      # composed by dist_simplify (Fig. 4)
MOVES = TRANSFORMERS + (Broadcast,)


# ------------------------------------------------------------------ program

@dataclass(frozen=True, slots=True)
class DistMap:
    name: str
    keys: tuple        # tuple[Var, ...]
    type: object       # value Type
    tag: object        # Local() | Dist(positions) | Random()
    kind: str = "view"  # 'view' (an M3 map) | 'temp' (cleared at the start of each trigger)
    copy_of: str | None = None   # a view kept a second time, partitioned otherwise (placement.py)


@dataclass(frozen=True, slots=True)
class DistStatement:
    """An M3 statement (rhs may hold transformers) and where it executes (Local / Dist / Random)."""
    stmt: Statement
    loc: object


@dataclass(frozen=True, slots=True)
class Exchange:
    """target := kind(source): a transformer over one materialized map, run by the driver.
    parts are key positions of the target for 'repart' / 'scatter', () for 'gather'."""
    kind: str          # 'repart' | 'scatter' | 'gather' | 'broadcast'
    target: str
    source: str
    parts: tuple = ()


@dataclass(frozen=True, slots=True)
class Block:
    mode: str          # 'local' | 'dist' | 'exchange'
    items: tuple       # DistStatement ... | Exchange ...


@dataclass(frozen=True, slots=True)
class DistTrigger:
    event: object      # toaster.calculus.maps.Event (kind 'batch')
    blocks: tuple      # tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class DistProgram:
    relations: tuple
    maps: tuple        # tuple[DistMap, ...]
    triggers: tuple    # tuple[DistTrigger, ...]
    queries: tuple
    stage: str = "tagged"   # 'tagged' (nested transformers) | 'blocks' (single-transformer form)

    def __str__(self) -> str:
        """The program's canonical text (what --dump-ir prints)."""
        from toaster.dist.printer import print_dist
        return print_dist(self)

    def map(self, name: str) -> DistMap:
        for m in self.maps:
            if m.name == name:
                return m
        raise KeyError(name)

    def tags(self) -> dict:
        return {m.name: m for m in self.maps}


# -------------------------------------------------------------- tag inference

class IllFormed(Exception):
    """An expression mixes locations in a way Hot Dog's operators do not allow."""


def map_ref_tag(ref: C.MapRef, maps: dict):
    """The tag of a map reference, with partition positions replaced by the reference's vars."""
    tag = maps[ref.name].tag
    if isinstance(tag, Dist):
        return Dist(tuple(ref.vars[i] for i in tag.parts))
    return tag


def tag_of(e, maps: dict, bound: frozenset = frozenset()):
    """Location of e's result (None: location independent). Raises IllFormed. `bound`: the
    variables bound outside e (a nested aggregate over a Dist map at a bound partition variable
    reads one partition: it stays where that partition is)."""
    match e:
        case C.DeltaRel():
            return LOCAL
        case C.Rel(name, _):
            raise UnsupportedError(f"base relation {name} read inside a trigger (distributed mode)")
        case C.Extremum(kind, gs, _, q):
            # a minimum is no sum of partial minima: its groups must be whole where it runs
            t = tag_of(q, maps, bound)
            if isinstance(t, Random) or (isinstance(t, Dist) and not set(t.parts) <= set(gs) | bound):
                raise IllFormed(f"a nested {kind.upper()} over a {t} expression")
            return t
        case C.MapRef():
            return map_ref_tag(e, maps)
        case C.Value() | C.Cmp():
            return None
        case C.Lift(_, q):
            return tag_of(q, maps, bound)
        case Repart(ps, q) | Scatter(ps, q):
            inner = tag_of(q, maps)
            want = (Dist, Random) if isinstance(e, Repart) else (Local,)
            if inner is not None and not isinstance(inner, want):
                raise IllFormed(f"{type(e).__name__} over a {inner} expression")
            return Dist(ps)
        case Gather(q):
            tag_of(q, maps)         # Gather(Q^Local) is allowed: it is the identity (Fig. 4)
            return LOCAL
        case Broadcast(q):
            inner = tag_of(q, maps)
            if inner is not None and not isinstance(inner, Local):
                raise IllFormed(f"Broadcast over a {inner} expression")
            return REPLICATED
        case C.Prod(fs) | C.Sum(fs):
            tags, inner = set(), bound
            for f in fs:
                t = tag_of(f, maps, inner)
                if t is not None:
                    tags.add(t)
                if isinstance(e, C.Prod):     # a product binds left to right
                    inner = inner | _outputs(f, inner)
            if REPLICATED in tags and isinstance(e, C.Prod) and len(tags) > 1 \
                    and all(isinstance(t, (Dist, Random, Replicated)) for t in tags):
                # every partition holds all of a replicated factor: the product lies where the rest does
                tags.discard(REPLICATED)
            if len(tags) > 1:
                raise IllFormed("operands at different locations: " + ", ".join(sorted(map(str, tags))))
            t = next(iter(tags), None)
            if isinstance(t, Random) and isinstance(e, C.Prod):
                raise IllFormed("join over a Random expression")
            return t
        case C.AggSum(gs, q):
            t = tag_of(q, maps, bound)
            if isinstance(t, Dist) and not set(t.parts) <= set(gs) | bound:
                return RANDOM
            return t
    raise TypeError(f"not a distributed calculus expression: {e!r}")


def _outputs(e, bound) -> frozenset:
    """Variables e binds (none where the calculus' schema does not know a node: the stricter
    reading, as if nothing were bound outside)."""
    if isinstance(e, MOVES):
        return _outputs(e.expr, bound)       # a transformer moves its input's rows unchanged
    try:
        return frozenset(C.schema(e, set(bound))[1])
    except Exception:
        return frozenset()


def statement_tag_ok(st: DistStatement, maps: dict) -> bool:
    """Well-formedness of one statement: rhs evaluates where the target lives."""
    target = maps[st.stmt.target]
    rhs_tag = tag_of(st.stmt.rhs, maps)
    want = map_ref_tag(C.MapRef(target.name, st.stmt.keys), maps) if not isinstance(target.tag, Random) else RANDOM
    if rhs_tag is None:
        return True
    if isinstance(want, Random):
        return isinstance(rhs_tag, (Dist, Random))
    return rhs_tag == want


def verify(prog: DistProgram) -> None:
    """Raise IllFormed unless every tagged statement is well formed."""
    maps = prog.tags()
    for trig in prog.triggers:
        for block in trig.blocks:
            for item in block.items:
                if isinstance(item, DistStatement) and not statement_tag_ok(item, maps):
                    raise IllFormed(f"statement for {item.stmt.target} in trigger {trig.event.relation} "
                                    f"does not evaluate where its target lives")


def transformer_count(e) -> int:
    match e:
        case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q):
            return 1 + transformer_count(q)
        case C.Prod(fs) | C.Sum(fs):
            return sum(transformer_count(f) for f in fs)
        case C.AggSum(_, q) | C.Lift(_, q) | C.Extremum(_, _, _, q):
            return transformer_count(q)
    return 0


def map_names(e) -> set:
    """Maps (and delta maps) an expression reads."""
    match e:
        case C.MapRef(n, _, _):
            return {n}
        case C.DeltaRel(r, _):
            return {delta_map_name(r)}
        case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q) | C.AggSum(_, q) | C.Lift(_, q) \
                | C.Extremum(_, _, _, q):
            return map_names(q)
        case C.Prod(fs) | C.Sum(fs):
            out = set()
            for f in fs:
                out |= map_names(f)
            return out
    return set()


def strip_transformers(e):
    """e without its location transformers (same bindings and values, ignoring location)."""
    match e:
        case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q):
            return strip_transformers(q)
        case C.Prod(fs):
            return C.Prod(tuple(strip_transformers(f) for f in fs))
        case C.Sum(ts):
            return C.Sum(tuple(strip_transformers(t) for t in ts))
        case C.AggSum(gs, q):
            return C.AggSum(gs, strip_transformers(q))
        case C.Lift(v, q):
            return C.Lift(v, strip_transformers(q))
        case C.Extremum(kind, gs, t, q):
            return C.Extremum(kind, gs, t, strip_transformers(q))
    return e


def dist_schema(e, bound=frozenset()) -> tuple[set, set]:
    """calculus.ir.schema for expressions holding transformers."""
    return C.schema(strip_transformers(e), bound)
