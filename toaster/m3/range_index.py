"""Ordered aggregate indexes for range-correlated nested aggregates (pass 'm3_range_index').

VWAP re-evaluates, per event, a sum over the outer map O[X] filtered by conditions on nested
sums correlated by a range, S(X) = Σ_{y > X} M[y]:

    VWAP[] := AggSum([], O[X] * (s ^= Σ M[Y]*{Y > X}) * (t ^= TOTAL[]) * {0.25*t > s} * ...)

`m3_view_cache` makes that O(n) per event. This pass makes it O(log U) (U = 2^64 keys): every map
read that way gets an ordered index, a sparse dyadic segment tree kept in an ordinary map

    IDX[g.., l, n] = Σ M[g.., y] over node(key(y), l) = n,     l in RIX_LEVELS = {0..63}

maintained by ONE statement per update of M, `IDX[g.., l, n] += AggSum([l, n], RIX_LEVELS[l] *
(n ^= rix_node(rix_key(y), l)) * Δ)`, a loop over the 64 levels. With M >= 0, S is monotone in X,
so each condition `a CMP S(X)` holds on an interval of keys whose end a descent from the root
finds (`rix_bound`, 64 lookups); the conditions together give [lo, hi] and the answer is
`rix_interval(IDX_O, lo, hi, g..)`, the sum of O over it (<= 128 lookups), per group of O.

Design (brief option (b), justified): the index reads are scalar functions that read maps
(toaster/ordered_index.py, one Python semantics for interp/k3/imp; in llvm one
native loop function per index map, emitted once per module: toaster/backends/llvm/range_index.py).
So a use site costs one call and an update site one loop statement: programs keep their size
(the unrolled form, 64 statements per update and 128 per descent, made VWAP's IR 2.8 MB).

Exactness: a descent needs monotone sums, so every inner map M has a count RIX_NEG of its
negative entries (kept by a statement reading M's old value); while any count is not 0 the site
evaluates its original expression with each nested sum read from the index (`rix_sum`,
O(n log U)), which holds for any values. Integer sums stay exact; float sums are sums of the same
values in another order, as the view caches' are.

Applies (tuple mode; batch mode with the option `batch`; before m3_view_cache) to := statements whose rhs, after `decompose`,
has sites AggSum(G, O[G.., X] * lifts * conditions) where: each correlated lift is Σ M[Y] * {Y op X}
(one map with the single key Y, op in < <= > >=, X and Y FLOAT or DATE); the other lifts do not
read X; every condition compares a correlated lift with a term free of X (or is `s != 0`); the
maps are updated only by `+=` of values of the event or batch (no map read). A condition may also
compare X itself with such a term (`X op a`: the interval end `rix_cut(a)`, no descent); a site
with only those is indexed with the option `thresholds` (PSP: a loop over few distinct volumes
was faster). Descents reading only the event and scalar maps are computed once per statement
(MST's two product terms share four). `+=` deltas that loop over a map's groups under an
inequality with the event (BXA) become one interval sum per group (toaster/m3/range_delta.py;
option `deltas`). Other shapes are left to m3_view_cache; --explain notes the threshold-only
sites left alone and the `+=` deltas still looping under an inequality (AXF). Bounds saturate at the int64 range; FLOAT and DATE keys never reach its ends,
INT keys may: an INT site also falls back while its outer map has an entry at an end key.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus.ir import (INT, AggSum, Arith, Cmp, Const, Func, Lift, MapRef, Prod, Sum, Value, Var,
                                 all_vars, expr_type, schema, subterms, term_vars)
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger
from toaster.ordered_index import I64_MAX, I64_MIN, LEVELS, REL_CODES, bound_code
from toaster.m3.range_delta import delta_sum, delta_terms, match_delta
from toaster.m3.view_cache import decompose
from toaster.passes import Options, Pass, register
from toaster.types import DATE, FLOAT, STRING

LEVELS_MAP = "RIX_LEVELS"
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_KEY_TYPES = (FLOAT, DATE, INT)


def _factors(e):
    while isinstance(e, AggSum) and not e.group:
        e = e.expr
    if isinstance(e, Prod):
        out = []
        for f in e.factors:
            out.extend(_factors(f) if isinstance(f, (Prod, AggSum)) and not getattr(f, "group", ()) else [f])
        return out
    return [e]


class _Site:
    """One matched AggSum: the outer map, its correlation variable, and the conditions."""

    def __init__(self, group, outer, x, plain, ranged, conds):
        self.group, self.outer, self.x = group, outer, x
        self.plain = plain          # lifts not reading X, and constant factors
        self.ranged = ranged        # {lift var: (inner MapRef, rel of y to X)}
        self.conds = conds          # [(lift var, op, term)]: S op term


def _match(e, bound: set):
    if not isinstance(e, AggSum):
        return None
    fs = _factors(e.expr)
    refs = [f for f in fs if isinstance(f, MapRef)]
    if len(refs) != 1 or not all(isinstance(f, (MapRef, Lift, Cmp)) or _constant(f, bound) for f in fs):
        return None
    outer = refs[0]
    free = [v for v in outer.vars if v not in e.group and v not in bound]
    if len(free) != 1 or len(set(outer.vars)) != len(outer.vars) or free[0].type not in _KEY_TYPES:
        return None
    x = free[0]
    if set(e.group) - set(outer.vars):
        return None
    plain, ranged, conds = [], {}, []
    for f in fs:
        if isinstance(f, Lift):
            if f.var in bound:
                return None
            if x not in all_vars(f.expr):
                if all_vars(f.expr) & set(outer.vars):
                    return None     # read per group or per key: not once per site
                plain.append(f)
                continue
            r = _range_sum(f.expr, x)
            if r is None:
                return None
            ranged[f.var] = r
        elif isinstance(f, Value):
            plain.append(f)
    for f in fs:
        if isinstance(f, Cmp):
            c = _condition(f, x, set(ranged), set(outer.vars))
            if c is None:
                return None
            conds.append(c)
    if not conds:
        return None
    return _Site(tuple(e.group), outer, x, plain, ranged, conds)


def _constant(f, bound: set) -> bool:
    """A value factor the same for every key of the site (it multiplies the interval's sum)."""
    return isinstance(f, Value) and term_vars(f.term) <= bound


def _range_sum(e, x):
    fs = _factors(e)
    refs = [f for f in fs if isinstance(f, MapRef)]
    cmps = [f for f in fs if isinstance(f, Cmp)]
    if len(refs) != 1 or len(cmps) != 1 or len(fs) != 2 or len(refs[0].vars) != 1:
        return None
    ref, c = refs[0], cmps[0]
    y = ref.vars[0]
    if y.type != x.type or c.op not in _FLIP:
        return None
    if c.left == y and c.right == x:
        return ref, c.op
    if c.left == x and c.right == y:
        return ref, _FLIP[c.op]
    return None


def _condition(c: Cmp, x, ranged: set, outer_keys: set):
    """(s, op, a) for a condition `s op a` on a correlated sum s, a free of X, of the outer map's
    keys and of correlated sums (the same for every key: a threshold); (None, op, a) for a
    condition `X op a` on the key itself (PSP's `volume > c * total`)."""
    for k, op, a in ((c.left, c.op, c.right), (c.right, _FLIP.get(c.op), c.left)):
        if k == x and op in _FLIP and not term_vars(a) & (ranged | outer_keys | {x}):
            a = _same_type(a, x.type)
            return None if a is None else (None, op, a)
    if c.op == "!=":
        for s, a in ((c.left, c.right), (c.right, c.left)):
            if isinstance(s, Var) and s in ranged and a == Const(0, INT):
                return s, ">", a   # a count or sum of values >= 0 is not 0 exactly when it is > 0
        return None
    for s, op, a in ((c.left, c.op, c.right), (c.right, _FLIP.get(c.op), c.left)):
        if isinstance(s, Var) and s in ranged and op in _FLIP:
            if term_vars(a) & (ranged | outer_keys | {x}):
                return None
            return s, op, a
    return None


def _same_type(a, t):
    """a as a term of type t whose key orders like it, or None (an int constant becomes an exact float)."""
    if a.type == t:
        return a
    if t == FLOAT and isinstance(a, Const) and a.type == INT and abs(a.value) <= 2 ** 53:
        return Const(float(a.value), FLOAT)
    return None


class _Indexer:
    def __init__(self, prog: M3Program, thresholds: bool = False, deltas: str = "groups"):
        self.prog, self.thresholds, self.deltas = prog, thresholds, deltas
        self.maps = {m.name: m for m in prog.maps}
        self.indexes: dict = {}     # (map, position) -> MapDecl of the index
        self.negs: dict = {}        # inner map -> MapDecl counting its negative entries
        self.groups: dict = {}      # (outer map, position) -> MapDecl counting nonzero entries per group
        self.extremes: dict = {}    # (outer map, position) -> MapDecl counting entries at an int64 end key
        self.new_maps: list = []
        self.notes: list = []
        self.args: set = set()      # the current trigger's arguments
        self.hoisted: dict = {}     # the current statement's shared lifts, in order

    def _fresh(self, name):
        taken = set(self.maps) | {m.name for m in self.new_maps}
        n, out = 1, name
        while out in taken:
            n += 1
            out = f"{name}{n}"
        return out

    def index(self, ref: MapRef, pos: int) -> MapDecl:
        key = (ref.name, pos)
        if key not in self.indexes:
            decl = self.maps[ref.name]
            keys = tuple(k for i, k in enumerate(decl.keys) if i != pos)
            level, node = Var("__rix_l", INT), Var("__rix_n", INT)
            body = Prod((decl.definition, _levels_definition(level),
                         Lift(node, Value(_node(decl.keys[pos], level)))))
            idx = MapDecl(self._fresh(f"{decl.name}_rix"), keys + (level, node), decl.type,
                          AggSum(keys + (level, node), body))
            self.new_maps.append(idx)
            self.indexes[key] = idx
        return self.indexes[key]

    def counter(self, table: dict, ref: MapRef, pos, suffix: str, op: str, extreme: bool = False) -> MapDecl:
        key = (ref.name, pos)
        if key not in table:
            decl = self.maps[ref.name]
            keys = () if extreme else tuple(k for i, k in enumerate(decl.keys) if i != pos)
            v = Var("__rix_v", decl.type)
            definition = AggSum(keys, Prod((Lift(v, decl.definition), Cmp(op, v, Const(0, INT)))
                                           + ((_at_end(decl.keys[pos]),) if extreme else ())))
            table[key] = MapDecl(self._fresh(f"{decl.name}_{suffix}"), keys, INT, definition)
            self.new_maps.append(table[key])
        return table[key]

    # ---------------------------------------------------------------- rewriting reads
    def rewrite(self, e, bound: set):
        site = _match(e, bound)
        if site is not None and (self.thresholds or any(v is not None for v, _, _ in site.conds)):
            return self.site(e, site)
        if site is not None:
            note = (f"{site.outer.name}: thresholds on its key {site.x.name} left to the re-evaluation (a loop "
                    f"over its keys; an index costs 64 upserts per update, slower on the finance bench's few "
                    f"distinct keys; m3_range_index{{thresholds=true}} indexes them)")
            if note not in self.notes:
                self.notes.append(note)
        match e:
            case AggSum(gs, q):
                return AggSum(gs, self.rewrite(q, bound))
            case Prod(fs):
                return Prod(tuple(self.rewrite(f, bound) for f in fs))
            case Sum(ts):
                return Sum(tuple(self.rewrite(t, bound) for t in ts))
        return e

    def site(self, e: AggSum, s: _Site):
        pos = s.outer.vars.index(s.x)
        oidx = self.index(s.outer, pos)
        gvars = tuple(v for i, v in enumerate(s.outer.vars) if i != pos)
        negs = [self.counter(self.negs, ref, 0, "neg", "<") for ref, _ in s.ranged.values()]
        if s.x.type == INT:         # a bound saturated at an int64 end would meet a key there
            negs.append(self.counter(self.extremes, s.outer, pos, "rixx", "!=", extreme=True))
        fast, lows, highs = list(s.plain), [], []
        rename = {f.var: self.shared(f.expr, f.var.type) for f in s.plain
                  if isinstance(f, Lift) and schema(f.expr)[0] <= self.args}
        for k, (var, op, a) in enumerate(s.conds):
            a = _rename(a, rename)
            if var is None:         # X op a: the bound is a's own key (no monotone sum needed)
                fast.append(self.bound(Func("rix_cut", (Const(REL_CODES[op], INT), a), INT), k))
                (lows if op in (">", ">=") else highs).append(fast[-1].var)
                continue
            ref, rel = s.ranged[var]
            iidx = self.index(ref, 0)
            suffix = rel in (">", ">=")
            strict = op in ("<", ">")
            # S falls with X (suffix): {S < a} is an up-set [least, ..], {S > a} the complement of {S <= a}
            if op in ("<", "<="):
                shift, side = 0, lows if suffix else highs
            else:
                shift, side = (-1, highs) if suffix else (1, lows)
                strict = not strict
            fast.append(self.bound(Func("rix_bound", (_name(iidx), Const(bound_code(rel, strict, shift), INT), a),
                                        INT), k))
            side.append(fast[-1].var)
        lo, hi = Var("__rix_lo", INT), Var("__rix_hi", INT)
        fast += [Lift(lo, Value(_extreme("listmax", lows, -2 ** 63))), Lift(hi, Value(_extreme("listmin", highs, 2 ** 63 - 1)))]
        if gvars:
            gd = self.counter(self.groups, s.outer, pos, "rixg", "!=")
            n = Var("__rix_g", INT)
            fast += [Lift(n, MapRef(gd.name, gvars, INT)), Cmp("!=", n, Const(0, INT))]
        fast.append(Value(Func("rix_interval", (_name(oidx), lo, hi) + gvars, s.outer.type)))
        # any negative entry: the original expression, each nested sum read from its index
        slow = []
        for f in _factors(e.expr):
            if isinstance(f, Lift) and f.var in s.ranged:
                ref, rel = s.ranged[f.var]
                f = Lift(f.var, Value(Func("rix_sum", (_name(self.index(ref, 0)), Const(REL_CODES[rel], INT),
                                                       Func("rix_key", (s.x,), INT)),
                                           ref.type)))
            slow.append(f)
        inner = sorted({r.name for r, _ in s.ranged.values()})
        what = f"range sums and descents for {', '.join(inner)}" if inner else "key thresholds"
        self.notes.append(f"{oidx.name}: ordered index of {s.outer.name} over {s.x.name} ({what}; "
                          f"O(log U) per event; local branch only: the distributed branch re-evaluates without it)")
        if not negs:                # thresholds on the key alone hold for any values: no fallback
            return AggSum(e.group, Prod(tuple(fast)))
        bad = Var("__rix_bad", INT)
        check = Lift(bad, Sum(tuple(MapRef(n.name, (), INT) for n in negs)))
        return AggSum(e.group, Prod((check, Sum((
            Prod((Cmp("=", bad, Const(0, INT)), AggSum(e.group, Prod(tuple(fast))))),
            Prod((Cmp("!=", bad, Const(0, INT)), AggSum(e.group, Prod(tuple(slow))))))))))

    def rewrite_delta(self, e, args: set):
        """A `+=` delta's sums over an inequality with the event as per-group interval sums
        (toaster/m3/range_delta.py), or e unchanged."""
        site = match_delta(e, args, _factors, self.deltas == "all")
        if site is not None:
            return self.delta_site(site)
        match e:
            case Sum(ts):
                return Sum(tuple(self.rewrite_delta(t, args) for t in ts))
            case Prod(fs) if not any(isinstance(f, MapRef) for f in fs):
                return Prod(tuple(self.rewrite_delta(f, args) for f in fs))
        return e

    def delta_site(self, s):
        pos = s.outer.vars.index(s.x)
        oidx = self.index(s.outer, pos)
        gvars = tuple(v for i, v in enumerate(s.outer.vars) if i != pos)
        fast, lows, highs = delta_terms(s, self.bound)
        lo, hi = Var("__rix_lo", INT), Var("__rix_hi", INT)
        fast += [Lift(lo, Value(_extreme("listmax", lows, -2 ** 63))),
                 Lift(hi, Value(_extreme("listmin", highs, 2 ** 63 - 1)))]
        gd = self.counter(self.groups, s.outer, pos, "rixg", "!=").name if set(gvars) - self.args else None
        note = (f"{oidx.name}: ordered index of {s.outer.name} over {s.x.name} for the delta loops under an "
                f"inequality with the event (one interval sum per group of {s.outer.name} instead of a loop "
                f"over its keys; local branch only)")
        if note not in self.notes:
            self.notes.append(note)
        # the factors free of X after the group count's lift: they may read the group's keys
        return AggSum(s.group, Prod(tuple(fast + delta_sum(s, _name(oidx), gd, lo, hi, gvars) + s.plain)))

    def shared(self, expr, t) -> Var:
        """A variable bound to expr once at the top of the statement (shared by its sites)."""
        key = ("lift", expr)
        if key not in self.hoisted:
            v = Var(f"__rix_p{len(self.hoisted) + 1}", t)
            self.hoisted[key] = Lift(v, expr)
        return self.hoisted[key].var

    def bound(self, fn: Func, k: int) -> Lift:
        """The bound fn, computed once per statement when it reads only hoisted values and event
        arguments (MST's two product terms need the same four descents), else at the site."""
        if term_vars(fn) <= self.args | {h.var for h in self.hoisted.values()}:
            key = ("bound", fn)
            if key not in self.hoisted:
                self.hoisted[key] = Lift(Var(f"__rix_s{len(self.hoisted) + 1}", INT), Value(fn))
            v = self.hoisted[key].var
            return Lift(Var(f"__rix_b{k + 1}", INT), Value(v))
        return Lift(Var(f"__rix_b{k + 1}", INT), Value(fn))

    # ------------------------------------------------------------- maintaining indexes
    def maintenance(self, trig: Trigger):
        """The trigger's statements with the index, count and group statements beside each update
        of an indexed map, or None if an update is not a `+=` of one bound key."""
        args = set(trig.event.args)
        out = []
        for s in trig.statements:
            extra_before, extra_after = [], []
            for table, op in ((self.negs, "<"), (self.groups, "!="), (self.extremes, "!=")):
                for (name, pos), decl in table.items():
                    if s.target == name:
                        if not self._simple(s, args):
                            return None
                        extra_before.append(_count_update(decl, s, pos, op, table is self.extremes))
            for (name, pos), idx in self.indexes.items():
                if s.target == name:
                    if not self._simple(s, args):
                        return None
                    extra_after.append(_index_update(idx, s, pos))
            out += extra_before + [s] + extra_after
        return out

    @staticmethod
    def _simple(s: Statement, args: set) -> bool:
        """A `+=` of values of the event (its arguments, or its batch's rows): no map read."""
        return s.op == "+=" and all(isinstance(k, Var) for k in s.keys) and not \
            any(isinstance(a, MapRef) for a in subterms(s.rhs))




def _rename(t, m: dict):
    match t:
        case Var() if t in m:
            return m[t]
        case Arith(op, args, ty):
            return Arith(op, tuple(_rename(a, m) for a in args), ty)
        case Func(name, args, ty):
            return Func(name, tuple(_rename(a, m) for a in args), ty)
    return t


def _name(decl: MapDecl):
    return Const(decl.name, STRING)


def _node(y, level):
    return Func("rix_node", (Func("rix_key", (y,), INT), level), INT)


def _extreme(fn: str, vs: list, default: int):
    if not vs:
        return Const(default, INT)
    return vs[0] if len(vs) == 1 else Func(fn, tuple(vs), INT)


def _levels_definition(level: Var):
    return Sum(tuple(Lift(level, Value(Const(i, INT))) for i in range(LEVELS)))


def _index_update(idx: MapDecl, s: Statement, pos: int) -> Statement:
    level, node = Var("__rix_l", INT), Var("__rix_n", INT)
    gkeys = tuple(k for i, k in enumerate(s.keys) if i != pos)
    rhs = AggSum(gkeys + (level, node), Prod((AggSum(s.keys, s.rhs), MapRef(LEVELS_MAP, (level,), INT),
                                              Lift(node, Value(_node(s.keys[pos], level))))))
    return Statement(idx.name, gkeys + (level, node), "+=", rhs)


def _at_end(k):
    """1 when the int key k is an end of the int64 range."""
    return Sum((Cmp("=", k, Const(I64_MIN, INT)), Cmp("=", k, Const(I64_MAX, INT))))


def _count_update(decl: MapDecl, s: Statement, pos, op: str, extreme: bool = False) -> Statement:
    """decl[g..] += {old + Δ op 0} - {old op 0}: reads the map's value before the update."""
    old, d = Var("__rix_old", expr_type(s.rhs)), Var("__rix_d", expr_type(s.rhs))
    zero = Const(0, INT)
    gkeys = () if extreme else tuple(k for i, k in enumerate(s.keys) if i != pos)
    new = Arith("+", (old, d), old.type)
    # the delta first: in a batch trigger it binds the keys the batch touches
    rhs = AggSum(gkeys, Prod((Lift(d, AggSum(s.keys, s.rhs)),) + ((_at_end(s.keys[pos]),) if extreme else ()) + (
        Lift(old, MapRef(s.target, s.keys, old.type)), Sum((
            Cmp(op, new, zero), Prod((Value(Const(-1, INT)), Cmp(op, old, zero))))))))
    return Statement(decl.name, gkeys, "+=", rhs)


def _reads_follow_writes(stmts, ix: _Indexer) -> bool:
    """No map behind a statement's index reads (the index, its map, that map's counts) changes at
    or after that statement: the reads hide in function arguments, so the order is checked here."""
    behind: dict = {}
    for (name, _), idx in ix.indexes.items():
        behind.setdefault(idx.name, {idx.name, name})
        for table in (ix.negs, ix.groups, ix.extremes):
            behind[idx.name] |= {d.name for (n, _), d in table.items() if n == name}
    for (name, _), idx in ix.indexes.items():     # an outer index's site reads its inner maps' counts
        for (n, _), d in ix.negs.items():
            behind[idx.name].add(d.name)
    reads = ("rix_bound", "rix_interval", "rix_sum")
    for i, s in enumerate(stmts):
        names = {f.args[0].value for f in _nested(s.rhs) if isinstance(f, Func) and f.name in reads}
        read = set().union(*(behind.get(n, {n}) for n in names)) if names else set()
        if any(later.target in read for later in stmts[i:]):
            return False
    return True


def _nested(e):
    """e and every node nested in it, terms included."""
    yield e
    for v in (getattr(e, f) for f in getattr(e, "__dataclass_fields__", ())):
        for x in (v if isinstance(v, tuple) else (v,)):
            if hasattr(x, "__dataclass_fields__"):
                yield from _nested(x)


def _uncovered_loops(s: Statement, args: set):
    """(map, var, over groups) of the loops in a `+=` statement over a map's key under an inequality
    with the event's values (AXF's delta: an inequality join): left as loops, the note says why."""
    for e in subterms(s.rhs):
        fs = _factors(e.expr) if isinstance(e, AggSum) else ()
        for ref in (f for f in fs if isinstance(f, MapRef)):
            for x in sorted(set(ref.vars) - args, key=lambda v: v.name):
                if any(isinstance(c, Cmp) and c.op in _FLIP and x in all_vars(c) and all_vars(c) & args
                       for c in fs):
                    yield ref.name, x.name, len(set(ref.vars) - args) > 1




def range_index(prog: M3Program, thresholds: bool = False, deltas: str = "groups", dropped: bool = False) -> M3Program:
    ix = _Indexer(prog, thresholds, deltas)
    triggers = []
    for t in prog.triggers:
        args = set(t.event.args)
        stmts = []
        ix.args = args
        for s in t.statements:
            if s.op == "+=" and t.event.kind in ("insert", "delete") and deltas != "none":
                ix.hoisted = {}
                rhs = ix.rewrite_delta(s.rhs, args)
                if rhs is not s.rhs:
                    if ix.hoisted:
                        rhs = AggSum(tuple(k for k in s.keys if k not in args),
                                     Prod(tuple(ix.hoisted.values()) + (rhs,)))
                    s = Statement(s.target, s.keys, s.op, rhs)
            if s.op == "+=" and t.event.kind in ("insert", "delete"):
                for name, x, groups in _uncovered_loops(s, args):
                    why = ("its index could not be kept in order with the map's updates (e.g. a self-join reads "
                           "it before updating the map, and the reads hide in function arguments, so later passes "
                           "could reorder them)" if dropped and groups else
                           "m3_range_index{deltas=none}" if deltas == "none" and groups else
                           "its shape is not one the delta indexes take (toaster/m3/range_delta.py)" if groups
                           else f"the loop is over one group's keys, where an index's upkeep, a level loop per "
                                f"update of {name}, cost more than the loop on AXF; m3_range_index{{deltas=all}} "
                                f"indexes it")
                    note = (f"{s.target}: the delta loops over {name}'s keys under an inequality on {x} with the "
                            f"event's values (an inequality join; not indexed: {why})")
                    if note not in ix.notes:
                        ix.notes.append(note)
            if s.op == ":=":
                ix.hoisted = {}
                rhs = ix.rewrite(decompose(s.rhs), args)
                if "rix_interval" in repr(rhs):
                    if ix.hoisted:
                        rhs = AggSum(s.keys, Prod(tuple(ix.hoisted.values()) + (rhs,)))
                    s = Statement(s.target, s.keys, s.op, rhs)
            stmts.append(s)
        triggers.append(Trigger(t.event, tuple(stmts)))
    if not ix.indexes:
        return M3Program(prog.relations, prog.maps, prog.triggers, prog.queries, prog.mode,
                         notes=prog.notes + tuple(ix.notes)) if ix.notes else prog
    out = []
    for t in triggers:
        if t.event.kind not in ("insert", "delete", "batch"):
            if any(s.target in {n for n, _ in ix.indexes} for s in t.statements):
                return prog if deltas == "none" else range_index(prog, thresholds, "none", dropped=True)
            out.append(t)
            continue
        stmts = ix.maintenance(t)
        if stmts is None or not _reads_follow_writes(stmts, ix):
            # a delta index that cannot be kept must not cost the re-evaluation sites theirs
            return prog if deltas == "none" else range_index(prog, thresholds, "none", dropped=True)
        out.append(Trigger(t.event, tuple(stmts)))
    level = Var("__rix_l", INT)
    levels = MapDecl(LEVELS_MAP, (level,), INT, AggSum((level,), _levels_definition(level)))
    init = Statement(LEVELS_MAP, (level,), ":=", AggSum((level,), _levels_definition(level)))
    ready = [t for t in out if t.event.kind == "ready"]
    if ready:
        out = [Trigger(t.event, t.statements + (init,)) if t is ready[0] else t for t in out]
    else:
        from toaster.calculus.maps import Event
        out.append(Trigger(Event("ready", "", ()), (init,)))
    return M3Program(prog.relations, prog.maps + (levels,) + tuple(ix.new_maps), tuple(out), prog.queries,
                     prog.mode, notes=prog.notes + tuple(ix.notes))


@register
@dataclass(frozen=True)
class M3RangeIndex(Pass):
    """Ordered aggregate indexes for range-correlated nested aggregates: O(log U) per event (VWAP, MST).

    batch: index batch-mode programs too (off: a batch of b rows costs 64 b index updates per
    indexed map, more than the one O(n) re-evaluation per batch when b is large).
    thresholds: also index sums whose only conditions compare the key itself with a threshold
    (PSP's `volume > c * total`; off: a loop over the key's few distinct values was faster).
    deltas: `+=` deltas looping under an inequality with the event (range_delta.py): 'groups'
    (default) where the loop enumerates groups (BXA), 'all' also over one group's keys (AXF),
    'none' never.
    """
    name = "m3_range_index"
    takes = "m3"
    gives = "m3"
    description = "ordered aggregate indexes for range-correlated nested aggregates: O(log U) per event"
    batch: bool = False
    thresholds: bool = False
    deltas: str = "groups"

    def run(self, ir, options: Options):
        if ir.mode != "tuple" and not self.batch:
            return ir
        if self.deltas not in ("groups", "all", "none"):
            raise ValueError(f"m3_range_index.deltas: 'groups', 'all' or 'none', not {self.deltas!r}")
        return range_index(ir, self.thresholds, self.deltas)
