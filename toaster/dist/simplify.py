"""Pass 'dist_simplify': remove redundant location transformers (Hot Dog §4.3.1, Fig. 3-4).

Fig. 4 rules (each removes a transformer):
  Repart_P(Q^Dist(P)) => Q      Gather(Q^Local) => Q
  Repart_P1 . Repart_P2 => Repart_P1      Repart_P1 . Scatter_P2 => Scatter_P1
  Gather . Repart_P => Gather   Gather . Scatter_P => (identity)   Scatter_P . Gather => Repart_P
The compositions also apply across an AggSum between the two transformers (Fig. 3 moves a
transformer through Sum_[A..]). Fig. 3 read right to left inside products:
  X(Q1) * X(Q2) => X(Q1 * Q2)                      (one exchange instead of two)
  X(Q1) * V     => X(Q1 * V)   for a location-independent V over Q1's variables
                                (the batch is filtered / pre-aggregated before it moves)
A rewrite is kept only when the statement stays well formed.
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.m3.ir import Statement
from toaster.passes import pass_
from toaster.dist.ir import (dist_schema, Local, Dist, Repart, Scatter, Gather, Broadcast, TRANSFORMERS, MOVES, DistStatement,
                                            Block, DistTrigger, DistProgram, IllFormed, tag_of, map_names,
                                            statement_tag_ok, transformer_count)


def _pure(e) -> bool:
    return not map_names(e) and transformer_count(e) == 0 and not any(
        isinstance(n, C.Rel) for n in _nodes(e))


def _nodes(e):
    yield e
    match e:
        case C.Prod(fs) | C.Sum(fs):
            for f in fs:
                yield from _nodes(f)
        case C.AggSum(_, q) | C.Lift(_, q) | Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q) \
                | C.Extremum(_, _, _, q):
            yield from _nodes(q)


def _tag(e, maps):
    try:
        return tag_of(e, maps)
    except IllFormed:
        return "ill-formed"


def _compose(outer, inner_body, inner):
    """outer . inner applied to inner_body (Fig. 4), or None when no rule applies."""
    match outer, inner:
        case Repart(ps, _), Repart():
            return Repart(ps, inner_body)
        case Repart(ps, _), Scatter():
            return Scatter(ps, inner_body)
        case Gather(), Repart():
            return Gather(inner_body)
        case Gather(), Scatter():
            return inner_body
        case Scatter(ps, _), Gather():
            return Repart(ps, inner_body)
    return None


def _inner_of(t):
    return t.expr


def _rewrite_once(e, maps):
    """One rule at the root of e, or None."""
    match e:
        case Repart(ps, q) if _tag(q, maps) == Dist(ps):
            return q
        case Gather(q) if isinstance(_tag(q, maps), Local) or _tag(q, maps) is None:
            return q
        case Repart(_, q) | Scatter(_, q) | Gather(q) if isinstance(q, TRANSFORMERS):
            return _compose(e, q.expr, q)
        case Gather(C.AggSum(_, Scatter())):
            return None     # a batch spread on purpose: partial aggregates on the workers (m3_to_dist)
        case Repart(_, C.AggSum(gs, q)) | Scatter(_, C.AggSum(gs, q)) | Gather(C.AggSum(gs, q)) \
                if isinstance(q, TRANSFORMERS):
            composed = _compose(e, C.AggSum(gs, q.expr), q)
            return composed
        case C.Prod(fs):
            for i in range(len(fs) - 1):
                a, b = fs[i], fs[i + 1]
                if type(a) is type(b) and isinstance(a, MOVES) and getattr(a, "parts", None) == getattr(b, "parts", None):
                    return _with(fs, i, _rebuild(a, C.mk_prod([a.expr, b.expr])), drop=i + 1)
            for i, a in enumerate(fs):
                if not isinstance(a, MOVES):
                    continue
                outs = dist_schema(a.expr, set())[1]
                for j in range(i + 1, len(fs)):
                    b = fs[j]
                    # a location-independent factor over a's variables can move inside a's transformer
                    if _pure(b) and not dist_schema(b, outs)[0]:
                        return _with(fs, i, _rebuild(a, C.mk_prod([a.expr, b])), drop=j)
    return None


def _with(fs, i, new, drop):
    rest = tuple(new if k == i else f for k, f in enumerate(fs) if k != drop)
    return rest[0] if len(rest) == 1 else C.Prod(rest)


def _rebuild(t, body):
    match t:
        case Repart(ps, _):
            return Repart(ps, body)
        case Scatter(ps, _):
            return Scatter(ps, body)
        case Broadcast(_):
            return Broadcast(body)
    return Gather(body)


def simplify_expr(e, maps):
    match e:
        case Repart(ps, q):
            e = Repart(ps, simplify_expr(q, maps))
        case Scatter(ps, q):
            e = Scatter(ps, simplify_expr(q, maps))
        case Gather(q):
            e = Gather(simplify_expr(q, maps))
        case Broadcast(q):
            e = Broadcast(simplify_expr(q, maps))
        case C.Prod(fs):
            e = C.Prod(tuple(simplify_expr(f, maps) for f in fs))
        case C.Sum(ts):
            e = C.Sum(tuple(simplify_expr(t, maps) for t in ts))
        case C.AggSum(gs, q):
            e = C.AggSum(gs, simplify_expr(q, maps))
        case C.Lift(v, q):
            e = C.Lift(v, simplify_expr(q, maps))
        case C.Extremum(kind, gs, t, q):
            e = C.Extremum(kind, gs, t, simplify_expr(q, maps))
    new = _rewrite_once(e, maps)
    return e if new is None else simplify_expr(new, maps)


def simplify_statement(st: DistStatement, maps: dict) -> DistStatement:
    s = st.stmt
    new = DistStatement(Statement(s.target, s.keys, s.op, simplify_expr(s.rhs, maps)), st.loc)
    try:
        ok = statement_tag_ok(new, maps)
    except IllFormed:
        ok = False
    return new if ok else st


@pass_("dist_simplify", takes="dist")
def dist_simplify(prog: DistProgram, options) -> DistProgram:
    """Remove redundant location transformers (Hot Dog Fig. 3-4)."""
    maps = prog.tags()
    triggers = []
    for trig in prog.triggers:
        blocks = tuple(Block(b.mode, tuple(simplify_statement(i, maps) if isinstance(i, DistStatement) else i
                                           for i in b.items)) for b in trig.blocks)
        triggers.append(DistTrigger(trig.event, blocks))
    return DistProgram(prog.relations, prog.maps, tuple(triggers), prog.queries, prog.stage)
