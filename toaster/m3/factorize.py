"""Factorized sums: one map and one loop where the calculus has one sum (pass 'm3_factorize').

The delta rules expand every product into a sum of monomials, so TPC-H Q3's
SUM(L_EXTENDEDPRICE * (1 - L_DISCOUNT)) becomes two maps per join shape, one holding
SUM(price) and one SUM(price * discount), each with its own update statements, and every
statement reading them comes in pairs:

    REVENUE[k]  += mC[ok] * mL3[ok] * cond          REVENUE[k] += {-1} * mC[ok] * mL4[ok] * cond
    mL3[ok]     += cond * {p}                       mL4[ok]    += cond * {d} * {p}

Two walks over the same slice, two upserts per match. This pass folds them back:

  * statements of one trigger that add to the same map at the same keys and differ only in
    their value factors ({p}, {-1}, {d} ...) become one statement whose value is the sum of
    theirs, common factors taken out: `REVENUE[k] += mC[ok] * mL[ok] * cond * {p * (1 + -1 * d)}`
    style (one loop, one upsert);
  * two maps `a`, `b` with the same keys are fused into one map `a + c*b` when every statement
    that reads one has a partner reading the other, identical except for a constant factor whose
    ratio is the same c everywhere (and the partners of writes are merged as above). Maps read by
    query results, read inside a nested expression or replaced with `:=` are never fused.

Statements move only past statements that neither read what they write nor write what they
read, so every read sees what it saw before. The rewrite is exact: it regroups a sum (constants
are combined symbolically, never rounded), and each fused map's definition is `def(a) + c *
def(b)`, so later passes and `--explain` see what it holds.
"""
from __future__ import annotations

import bisect
import dataclasses
from collections import Counter
from fractions import Fraction

from toaster.calculus.ir import (INT, FLOAT, AggSum, Arith, Const, MapRef, Prod, Value, all_vars, mk_prod, mk_sum)
from toaster.calculus.simplify import subst
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger
from toaster.passes import pass_


# ------------------------------------------------------------------ statement shape

@dataclasses.dataclass(frozen=True)
class _Shape:
    """A `+=` statement as: AggSum group, structural factors (in order), value factors."""
    group: tuple | None
    structure: tuple
    values: tuple          # value Terms (from Value factors)


def _shape(st: Statement) -> _Shape | None:
    if st.op != "+=":
        return None
    rhs, group = st.rhs, None
    if isinstance(rhs, AggSum):
        group, rhs = rhs.group, rhs.expr
    factors = rhs.factors if isinstance(rhs, Prod) else (rhs,)
    structure = tuple(f for f in factors if not isinstance(f, Value))
    values = tuple(f.term for f in factors if isinstance(f, Value))
    return _Shape(group, structure, values)


def _const_number(t):
    """An exact int/Fraction for an integer constant term, else None (decimals are left alone)."""
    if isinstance(t, Const) and isinstance(t.value, int) and not isinstance(t.value, bool):
        return t.value
    return None


def _split_constant(values) -> tuple:
    """(the integer constant product, the other value terms)."""
    k, rest = Fraction(1), []
    for t in values:
        n = _const_number(t)
        if n is None:
            rest.append(t)
        else:
            k *= n
    return k, tuple(rest)


def _term_type(ts) -> object:
    from toaster.calculus.ir import term_type
    return FLOAT if any(term_type(t) == FLOAT for t in ts) else INT


def _const(k: Fraction):
    if k.denominator == 1:
        return Const(int(k), INT)
    return Arith("/", (Const(k.numerator, INT), Const(k.denominator, INT)), FLOAT)


def _times(k: Fraction, ts: tuple):
    """The term k * t1 * t2 ... (None for an empty product with k == 1)."""
    args = (() if k == 1 else (_const(k),)) + tuple(ts)
    if not args:
        return Const(1, INT)
    return args[0] if len(args) == 1 else Arith("*", args, _term_type(args))


def _merged_values(parts: list) -> tuple:
    """Value terms equal to Σ k_i * Π values_i, common non-constant factors taken out."""
    split = [(k * _split_constant(vs)[0], _split_constant(vs)[1]) for k, vs in parts]
    common = Counter(split[0][1])
    for _, rest in split[1:]:
        common &= Counter(rest)
    out = list(common.elements())
    summands = []
    for k, rest in split:
        left = Counter(rest) - common
        if k != 0:
            summands.append(_times(k, tuple(left.elements())))
    if not summands:
        return (Const(0, INT),)
    total = summands[0] if len(summands) == 1 else Arith("+", tuple(summands), _term_type(summands))
    if not (isinstance(total, Const) and total.value == 1):
        out.append(total)
    return tuple(out)


def _statement(st: Statement, shape: _Shape, values: tuple) -> Statement:
    body = mk_prod(shape.structure + tuple(Value(v) for v in values))
    return Statement(st.target, st.keys, "+=", AggSum(shape.group, body) if shape.group is not None else body)


# ---------------------------------------------------------------- reads and writes

def _top_refs(shape: _Shape) -> list:
    return [f for f in shape.structure if isinstance(f, MapRef)]


def _nested_maps(e, top: bool = True) -> set:
    """Names of maps read anywhere but as a top-level factor of a statement's product."""
    out = set()
    if isinstance(e, AggSum) and top:
        return _nested_maps(e.expr, True)
    if isinstance(e, Prod) and top:
        for f in e.factors:
            if not isinstance(f, MapRef):
                out |= _nested_maps(f, False)
        return out
    if isinstance(e, MapRef):
        return set() if top else {e.name}
    for f in dataclasses.fields(e) if dataclasses.is_dataclass(e) else ():
        v = getattr(e, f.name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if dataclasses.is_dataclass(x):
                out |= _nested_maps(x, False)
    return out


def _maps_read(e) -> set:
    if isinstance(e, MapRef):
        return {e.name}
    out = set()
    for f in dataclasses.fields(e) if dataclasses.is_dataclass(e) else ():
        v = getattr(e, f.name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if dataclasses.is_dataclass(x):
                out |= _maps_read(x)
    return out


def _names_in(x) -> set:
    """Every string inside a (nested) dataclass: map names a query result refers to."""
    if isinstance(x, str):
        return {x}
    out = set()
    if isinstance(x, (tuple, list)):
        for y in x:
            out |= _names_in(y)
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            out |= _names_in(getattr(x, f.name))
    return out


# ------------------------------------------------------------------- trigger merge

def _rename(shape: _Shape, ren: dict) -> tuple:
    return tuple(MapRef(ren.get(f.name, f.name), f.vars, f.type) if isinstance(f, MapRef) else f
                 for f in shape.structure)


def _can_move(stmts, ren: dict, src: int, dst: int) -> bool:
    """Can statement src move up to position dst (dst < src) without changing what anything
    reads? (Compared on fused names: after fusion a and b are one map.)"""
    def names(xs):
        return {ren.get(x, x) for x in xs}

    st = stmts[src]
    reads, target = names(_maps_read(st.rhs)), ren.get(st.target, st.target)
    for t in stmts[dst + 1:src]:
        t_target = ren.get(t.target, t.target)
        if t_target in reads or target in names(_maps_read(t.rhs)) or (t.op != "+=" and t_target == target):
            return False
    return True


def _reads_before_writes(t: Trigger, ren: dict) -> bool:
    """Per fused pair, the trigger reads it only before (or only after) it writes it: then the
    fused map read anywhere sees what each of the two maps was seen as."""
    for b, a in ren.items():
        reads = [i for i, s in enumerate(t.statements) if _maps_read(s.rhs) & {a, b}]
        writes = [i for i, s in enumerate(t.statements) if s.target in (a, b)]
        if reads and writes and not (max(reads) < min(writes) or max(writes) < min(reads)):
            return False
    return True


def _merge_trigger(t: Trigger, ren: dict, coef: dict) -> tuple[Trigger, bool]:
    """Merge the statements of t that add to the same (renamed) map with the same structure.
    Returns (trigger, ok): ok is False when a paired read has no partner to merge with."""
    stmts = list(t.statements)
    shapes = [_shape(s) for s in stmts]
    if not _reads_before_writes(t, ren):
        return t, False
    groups: dict = {}
    for i, (s, sh) in enumerate(zip(stmts, shapes)):
        if sh is None:
            if s.target in ren or _maps_read(s.rhs) & set(ren):
                return t, False
            continue
        key = (ren.get(s.target, s.target), s.keys, sh.group, _rename(sh, ren))
        groups.setdefault(key, []).append(i)
    out, done = [], set()
    for i, s in enumerate(stmts):
        if i in done:
            continue
        sh = shapes[i]
        if sh is None:
            out.append(s)
            continue
        key = (ren.get(s.target, s.target), s.keys, sh.group, _rename(sh, ren))
        members = [j for j in groups[key] if j not in done]
        if not all(_can_move(stmts, ren, j, i) for j in members[1:]):
            members = [i]
        paired = [f.name for f in _top_refs(sh) if f.name in ren or f.name in ren.values()]
        parts = []
        for j in members:
            # a statement writing b contributes c_b times its rows to a + c_b*b
            parts.append((coef.get(stmts[j].target, Fraction(1)), shapes[j].values, stmts[j]))
        if paired:
            # the fused read a + c*b covers the pair: one a-reading and one b-reading statement
            # whose weights are in ratio c
            ok, parts = _pair_reads(parts, ren, coef)
            if not ok:
                return t, False
        done.update(members)
        if len(members) == 1 and not paired and stmts[i].target not in ren:
            out.append(s)
            continue
        merged = _merged_values([(k, vs) for k, vs, _ in parts])
        new_shape = _Shape(sh.group, _rename(sh, ren), ())
        out.append(_statement(Statement(ren.get(s.target, s.target), s.keys, "+=", s.rhs), new_shape, merged))
    return Trigger(t.event, tuple(out)), True


def _pair_reads(parts: list, ren: dict, coef: dict) -> tuple[bool, list]:
    """parts: (weight, values, statement) of statements identical after renaming, reading a
    paired map. Valid when they are one a-reader and one b-reader with weights in ratio c_b;
    the result is the a-reader's part alone (it reads the fused map a + c_b*b)."""
    def read_of(st):
        return next(f.name for f in _top_refs(_shape(st)) if f.name in ren or f.name in ren.values())

    if len(parts) != 2:
        return False, parts
    (wa, va, sa), (wb, vb, sb) = parts
    if read_of(sa) in ren:
        (wa, va, sa), (wb, vb, sb) = (wb, vb, sb), (wa, va, sa)
    b = read_of(sb)
    if read_of(sa) in ren or b not in ren or ren[b] != read_of(sa):
        return False, parts
    ka, ra = _split_constant(va)
    kb, rb = _split_constant(vb)
    if Counter(ra) != Counter(rb) or ka == 0 or wb * kb != wa * ka * coef[b]:
        return False, parts
    return True, [(wa, va, sa)]


# -------------------------------------------------------------------- candidates

def _candidate_pairs(prog: M3Program, frozen: set) -> list:
    """(a, b) pairs of maps read by two statements of one trigger that are identical except
    for the map (and constant factors); a map in two pairs keeps its first (statement order).

    Statements are bucketed by their shape with one map-read position masked out, so only
    statements that can pair are compared: linear in the statements for a 5,000-way OR, where
    comparing every two statements took minutes."""
    maps = {m.name: m for m in prog.maps}
    index = {m.name: i for i, m in enumerate(prog.maps)}
    used, out = set(), []

    def signature(ref):
        m = maps.get(ref.name)
        if m is None or ref.name in frozen:
            return None
        return ref.vars, m.type, tuple(k.type for k in m.keys)

    for t in prog.triggers:
        buckets: dict = {}       # masked shape -> [(statement position, map read there)]
        reads = []               # per statement: [(bucket, map read)]
        for pos, s in enumerate(t.statements):
            h = _shape(s)
            mine = []
            if h is not None:
                for j, f in enumerate(h.structure):
                    sig = isinstance(f, MapRef) and signature(f)
                    if not sig:
                        continue
                    key = (s.keys, h.group, j, sig, h.structure[:j] + h.structure[j + 1:])
                    members = buckets.setdefault(key, ([], []))
                    members[0].append(pos)
                    members[1].append(f)
                    mine.append((members, f))
            reads.append(mine)
        # the pairs in the order comparing statement i with each later k would find them
        for pos, mine in enumerate(reads):
            while True:
                best = None
                for (positions, refs), r1 in mine:
                    if r1.name in used:
                        continue
                    for n in range(bisect.bisect_right(positions, pos), len(positions)):
                        k, r2 = positions[n], refs[n]
                        if best is not None and k >= best[0]:
                            break
                        if r2.name != r1.name and r2.name not in used:
                            best = (k, r1.name, r2.name)
                            break
                if best is None:
                    break
                _, a, b = best
                out.append((a, b) if index[a] < index[b] else (b, a))
                used |= {a, b}
    return out


def _coefficients(prog: M3Program, pairs: list) -> dict:
    """c_b for each pair, from the read sites: the ratio of the b-reader's constant weight to the
    a-reader's (each times its target's own coefficient); propagated until fixed."""
    ren = {b: a for a, b in pairs}
    coef: dict = {}
    changed = True
    while changed:
        changed = False
        for t in prog.triggers:
            shapes = [(s, _shape(s)) for s in t.statements if _shape(s) is not None]
            for s1, h1 in shapes:
                b_reads = [f.name for f in _top_refs(h1) if f.name in ren]
                if len(b_reads) != 1 or b_reads[0] in coef:
                    continue
                b = b_reads[0]
                if s1.target in ren and s1.target not in coef:
                    continue
                for s2, h2 in shapes:
                    if s2 is s1 or s2.keys != s1.keys or h2.group != h1.group:
                        continue
                    if ren.get(s2.target, s2.target) != ren.get(s1.target, s1.target):
                        continue
                    if _rename(h2, ren) != _rename(h1, ren) or s2.target in ren and s2.target not in coef:
                        continue
                    ka, ra = _split_constant(h2.values)
                    kb, rb = _split_constant(h1.values)
                    if ka == 0 or Counter(ra) != Counter(rb):
                        continue
                    wa = coef.get(s2.target, Fraction(1)) * ka
                    wb = coef.get(s1.target, Fraction(1)) * kb
                    coef[b] = wb / wa
                    changed = True
                    break
    return coef


def _try_fuse(prog: M3Program, pairs: list) -> tuple[M3Program | None, list]:
    """The program with `pairs` fused (and statements merged), or (None, pairs to drop)."""
    coef = _coefficients(prog, pairs)
    # an integer c keeps integer maps integers and float maps exactly what they summed before
    unknown = [(a, b) for a, b in pairs if b not in coef or coef[b].denominator != 1]
    if unknown:
        return None, unknown
    ren = {b: a for a, b in pairs}
    triggers = []
    for t in prog.triggers:
        nt, ok = _merge_trigger(t, ren, coef)
        if not ok:
            names = _maps_read_or_written(t)
            return None, [(a, b) for a, b in pairs if {a, b} & names] or pairs
        triggers.append(nt)
    maps = []
    for m in prog.maps:
        if m.name in ren:
            continue
        partner = next((b for a, b in pairs if a == m.name), None)
        if partner is not None:
            mb = prog.map(partner)
            body_b = subst(mb.definition, dict(zip(mb.keys, m.keys)))
            c = coef[partner]
            definition = mk_sum((m.definition, mk_prod((Value(_const(c)), body_b))))
            m = MapDecl(m.name, m.keys, m.type, definition, m.role)
        maps.append(m)
    notes = tuple(f"fused map {b} into {a} (it holds {a} + {coef[b]} * {b}): one map, one statement per update"
                  for a, b in pairs)
    return M3Program(prog.relations, tuple(maps), tuple(triggers), prog.queries, prog.mode,
                     notes=prog.notes + notes), []


def _maps_read_or_written(t: Trigger) -> set:
    out = set()
    for s in t.statements:
        out |= {s.target} | _maps_read(s.rhs)
    return out


def factorize(prog: M3Program) -> M3Program:
    frozen = set()
    for q in prog.queries:
        frozen |= _names_in(q)
    for m in prog.maps:
        if m.role == "query":
            frozen.add(m.name)
    for t in prog.triggers:
        for s in t.statements:
            frozen |= _nested_maps(s.rhs)
            if s.op != "+=":
                frozen.add(s.target)
    pairs = _candidate_pairs(prog, frozen)
    fused = None
    while pairs:
        fused, drop = _try_fuse(prog, pairs)
        if fused is not None:
            break
        pairs = [p for p in pairs if p not in drop]
    if fused is None:
        fused, _ = _try_fuse(prog, [])
    return fused if fused is not None and fused != prog else prog


@pass_("m3_factorize", "m3")
def m3_factorize(program: M3Program, options=None) -> M3Program:
    """Keep factorized sums factorized: merge statements that differ only in value factors and
    fuse pairs of maps always read as a linear combination (one loop, one map per sum)."""
    return factorize(program)
