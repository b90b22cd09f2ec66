"""Pass 'dist_blocks': single-transformer form, statement blocks, block fusion (Hot Dog §4.3.2).

Single-transformer form: every transformer X(Q) becomes
    TMP_a[V] := AggSum(V, Q)      at Q's location (skipped when Q is a plain map reference)
    TMP_b    := X(TMP_a)          an Exchange the driver runs
and X(Q) is replaced by TMP_b[V], where V are Q's output variables used elsewhere in the
statement (the batch is pre-aggregated to what the rest needs). Innermost transformers first.
Each resulting statement / exchange starts as its own block (mode local, dist or exchange);
block fusion (Appendix C.3) then merges a block into an earlier one of the same mode when it
commutes with every block in between.
"""
from __future__ import annotations

from toaster.calculus import ir as C
from toaster.calculus.simplify import subst
from toaster.m3.ir import Statement
from toaster.errors import UnsupportedError
from toaster.passes import pass_
from toaster.types import INT, FLOAT
from toaster.dist.ir import (dist_schema, Local, Dist, Random, LOCAL, RANDOM, REPLICATED, Repart, Scatter, Gather,
                             Broadcast,
                                            TRANSFORMERS, DistMap, DistStatement, Exchange, Block, DistTrigger,
                                            DistProgram, tag_of, map_names, delta_map_name)

_HOLE = C.MapRef("__HOLE__", ())


def expr_type(e, maps: dict):
    match e:
        case C.MapRef(n, _, _) if n in maps:
            return maps[n].type
        case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q) | C.AggSum(_, q):
            return expr_type(q, maps)
        case C.Lift():
            return INT
        case C.Prod(fs) | C.Sum(fs):
            return FLOAT if any(expr_type(f, maps) == FLOAT for f in fs) else INT
    return C.expr_type(e)


def _ordered_vars(e) -> list:
    """Variables of e in first-occurrence order (deterministic temp key order)."""
    out = []

    def term(t):
        match t:
            case C.Var():
                out.append(t)
            case C.Arith(_, args, _) | C.Func(_, args, _):
                for a in args:
                    term(a)

    def walk(x):
        match x:
            case C.Rel(_, vs) | C.DeltaRel(_, vs) | C.MapRef(_, vs, _):
                out.extend(vs)
            case C.Value(t):
                term(t)
            case C.Cmp(_, a, b):
                term(a)
                term(b)
            case C.Lift(v, q):
                walk(q)
                out.append(v)
            case C.Prod(fs) | C.Sum(fs):
                for f in fs:
                    walk(f)
            case C.AggSum(gs, q) | Repart(gs, q) | Scatter(gs, q):
                walk(q)
                out.extend(gs)
            case C.Extremum(_, gs, t, q):
                walk(q)
                term(t)
                out.extend(gs)
            case Gather(q) | Broadcast(q):
                walk(q)
    walk(e)
    return list(dict.fromkeys(out))


def _canonical(e, tag):
    """e with its variables renamed by first occurrence (types kept): the CSE key of a temp, so
    that alpha-equivalent sub-expressions (one batch aggregate written by several statements,
    each with its own variable names: TPC-H Q3's LINEITEM trigger had five temps for two sums)
    compute one temp and move in one exchange."""
    names = {v: C.Var(f"__cse{i}", v.type) for i, v in enumerate(_ordered_vars(e))}
    where = Dist(tuple(names.get(p, p) for p in tag.parts)) if isinstance(tag, Dist) else tag
    return subst(e, names), where


def _replace(e, old, new):
    if e is old:
        return new
    match e:
        case Repart(ps, q):
            return Repart(ps, _replace(q, old, new))
        case Scatter(ps, q):
            return Scatter(ps, _replace(q, old, new))
        case Gather(q):
            return Gather(_replace(q, old, new))
        case Broadcast(q):
            return Broadcast(_replace(q, old, new))
        case C.Prod(fs):
            return C.Prod(tuple(_replace(f, old, new) for f in fs))
        case C.Sum(ts):
            return C.Sum(tuple(_replace(t, old, new) for t in ts))
        case C.AggSum(gs, q):
            return C.AggSum(gs, _replace(q, old, new))
        case C.Lift(v, q):
            return C.Lift(v, _replace(q, old, new))
        case C.Extremum(kind, gs, t, q):
            return C.Extremum(kind, gs, t, _replace(q, old, new))
    return e


def _innermost_transformer(e):
    match e:
        case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q):
            return _innermost_transformer(q) or e
        case C.Prod(fs) | C.Sum(fs):
            for f in fs:
                t = _innermost_transformer(f)
                if t is not None:
                    return t
        case C.AggSum(_, q) | C.Lift(_, q) | C.Extremum(_, _, _, q):
            return _innermost_transformer(q)
    return None


class _STF:
    def __init__(self, prog: DistProgram):
        self.maps = prog.tags()
        self.temps = []
        self.counter = 0
        self.memo = {}          # CSE within one trigger: reset per trigger
        self.memo_reads = {}    # memo key -> the program maps its temp was computed from
        self.temp_reads = {}    # temp -> the same

    def temp(self, keys, type_, tag) -> str:
        self.counter += 1
        name = f"TMP_{self.counter}"
        m = DistMap(name, tuple(keys), type_, tag, kind="temp")
        self.temps.append(m)
        self.maps[name] = m
        return name

    def statement(self, st: DistStatement) -> list:
        s = st.stmt
        out = []
        rhs = s.rhs
        while (t := _innermost_transformer(rhs)) is not None:
            q = t.expr
            if _innermost_transformer(q) is not None:
                raise AssertionError("innermost transformer expected")
            if dist_schema(q, set())[0]:
                raise UnsupportedError(f"a moved sub-expression of {s.target}'s statement is correlated "
                                       "with its context (distributed mode)")
            used = set(_ordered_vars(_replace(rhs, t, _HOLE))) | set(s.keys)
            if isinstance(t, (Repart, Scatter)):
                used |= set(t.parts)        # the partition columns stay (a spread batch: m3_to_dist)
            outs = dist_schema(q, set())[1]
            keys = [v for v in _ordered_vars(q) if v in outs and v in used]
            vtype = expr_type(q, self.maps)
            if isinstance(q, C.MapRef) and len(set(q.vars)) == len(q.vars) and keys == list(q.vars):
                source = q.name
            else:
                src_tag = tag_of(C.AggSum(tuple(keys), q), self.maps)
                if src_tag is None:
                    src_tag = LOCAL
                rhs_q = q if isinstance(q, C.AggSum) and q.group == tuple(keys) else C.AggSum(tuple(keys), q)
                # CSE: within a trigger every map is read before it is written, so the same
                # expression computes the same temp wherever it occurs
                memo_key = ("compute", *_canonical(rhs_q, src_tag))
                source = self.memo.get(memo_key)
                if source is None:
                    source = self.temp(keys, vtype, self.map_tag(src_tag, keys))
                    self.remember(memo_key, source, map_names(rhs_q))
                    out.append(DistStatement(Statement(source, tuple(keys), ":=", rhs_q), src_tag))
            kind = type(t).__name__.lower()
            parts = tuple(keys.index(p) for p in t.parts) if isinstance(t, (Repart, Scatter)) else ()
            target = self.memo.get((kind, source, parts))
            if target is None:
                where = LOCAL if isinstance(t, Gather) else REPLICATED if isinstance(t, Broadcast) else Dist(parts)
                target = self.temp(keys, vtype, where)
                self.remember((kind, source, parts), target, {source})
                out.append(Exchange(kind, target, source, parts))
            rhs = _replace(rhs, t, C.MapRef(target, tuple(keys), vtype))
        loc = tag_of(rhs, self.maps)
        target = self.maps[s.target]
        if loc is None:
            loc = LOCAL if isinstance(target.tag, Local) else None
            if loc is None:
                raise UnsupportedError(f"statement for distributed map {s.target} has no distributed input")
        out.append(DistStatement(Statement(s.target, s.keys, s.op, rhs), loc))
        self.forget(s.target)
        return out

    def remember(self, key, temp: str, reads: set) -> None:
        """Memoize a temp with the program maps it reads (through the temps it reads)."""
        deps = set()
        for n in reads:
            deps |= self.temp_reads.get(n, {n})
        self.memo[key] = temp
        self.memo_reads[key] = deps
        self.temp_reads[temp] = deps

    def forget(self, written: str) -> None:
        """A trigger may read a map after a statement wrote it (a re-evaluation placed after
        the updates it reads): temps computed from the old contents are not reused."""
        for key in [k for k, deps in self.memo_reads.items() if written in deps]:
            del self.memo[key]
            del self.memo_reads[key]

    @staticmethod
    def map_tag(expr_tag, keys):
        if isinstance(expr_tag, Dist):
            return Dist(tuple(keys.index(p) for p in expr_tag.parts))
        return expr_tag


# -------------------------------------------------------------------- fusion

def _writes(item) -> str:
    return item.target if isinstance(item, Exchange) else item.stmt.target


def _reads(item) -> set:
    return {item.source} if isinstance(item, Exchange) else map_names(item.stmt.rhs)


def _op(item) -> str:
    return ":=" if isinstance(item, Exchange) else item.stmt.op


def items_commute(a, b) -> bool:
    wa, wb = _writes(a), _writes(b)
    if wa in _reads(b) or wb in _reads(a):
        return False
    return not (wa == wb and ":=" in (_op(a), _op(b)))


def blocks_commute(b1: Block, b2: Block) -> bool:
    return all(items_commute(x, y) for x in b1.items for y in b2.items)


def fuse_blocks(blocks: list) -> list:
    """Hot Dog Appendix C.3: merge each block into the head when it commutes with those between."""
    if not blocks:
        return []
    hd, tl = blocks[0], blocks[1:]
    head, rest, changed = hd, [], False
    for b in tl:
        if b.mode == head.mode and all(blocks_commute(x, b) for x in rest):
            head, changed = Block(head.mode, head.items + b.items), True
        else:
            rest.append(b)
    if changed:
        return fuse_blocks([head] + rest)
    return [hd] + fuse_blocks(tl)


def mode_of(item) -> str:
    if isinstance(item, Exchange):
        return "exchange"
    return "local" if isinstance(item.loc, Local) else "dist"


@pass_("dist_blocks", takes="dist", skippable=False,
       why_required="the PySpark code generator needs single-transformer form and blocks")
def dist_blocks(prog: DistProgram, options=None) -> DistProgram:
    """Single-transformer form; each statement and exchange its own block (Hot Dog §4.3.2)."""
    if prog.stage == "blocks":
        return prog
    stf = _STF(prog)
    triggers = []
    for trig in prog.triggers:
        stf.memo, stf.memo_reads, stf.temp_reads = {}, {}, {}
        items = []
        for b in trig.blocks:
            for it in b.items:
                items += stf.statement(it) if isinstance(it, DistStatement) else [it]
        triggers.append(DistTrigger(trig.event, tuple(Block(mode_of(i), (i,)) for i in items)))
    return DistProgram(prog.relations, prog.maps + tuple(stf.temps), tuple(triggers), prog.queries, stage="blocks")


@pass_("dist_fuse", takes="dist")
def dist_fuse(prog: DistProgram, options=None) -> DistProgram:
    """Block fusion (Hot Dog Appendix C.3): merge a block into an earlier one of the same mode."""
    if prog.stage != "blocks":
        raise ValueError("dist_fuse runs on blocks (after dist_blocks)")
    triggers = tuple(DistTrigger(t.event, tuple(fuse_blocks(list(t.blocks)))) for t in prog.triggers)
    return DistProgram(prog.relations, prog.maps, triggers, prog.queries, stage="blocks")
