"""View caches for range-correlated nested aggregates (pass 'm3_view_cache', VLDBJ'14 §5.2).

HO-IVM cannot materialize a nested aggregate correlated by an inequality, such as VWAP's

    (__sub3 ^= AggSum([], M[B2_PRICE] * {B2_PRICE > B1_PRICE}))

inside the statement that re-evaluates the query over the outer map O[B1_PRICE]: B1_PRICE is an
input variable of the nested aggregate E. So every event re-evaluates E once per outer key, a
nested loop (O(n^2) per event in the number of distinct prices). This pass materializes E as a
*view cache* keyed by the correlation variables X, over a finite domain:

    DOM[X]   = AggSum(X, R(..X..))                      R: the relation the outer map reads
    CACHE[X] = AggSum(X, {DOM[X] != 0} * E(X))

Every X the outer loop visits has a row in R, so it is in DOM and CACHE[X] = E(X) there. The
cache is maintained by two statements per trigger, placed before the statement that reads it:

    CACHE[X]  += AggSum(X, {DOM[X] != 0} * ΔE(X))              every trigger that updates M
    CACHE[x0] += {DOM[x0] != 0} * E(x0) - CACHE[x0]            triggers on R: the event's own key

ΔE is E with M replaced by the update statement's rows (only pure `+=` statements whose rows are
values of the event, so ΔE is O(1) per key). The first statement is O(|DOM|), the second one
evaluation of E (O(|M|)), so the event costs O(n) where it cost O(n^2), and the re-evaluation
reads CACHE[B1_PRICE] in O(1). Caches are built for tuple-mode programs only (a batch trigger
re-evaluates once per batch already); in both modes the re-evaluation is decomposed into
independent loops where its factors share no variable (`decompose`). Where a pattern does not match exactly (several maps in E, M replaced with `:=`,
update rows that read maps), the program is left as it was.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus.ir import (INT, AggSum, Cmp, Const, Lift, MapRef, Prod, Rel, Sum, Value, Var, all_vars,
                                 expr_type, mk_prod, relations, schema, subterms)
from toaster.calculus.simplify import subst
from toaster.m3.hoivm import canonical
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger
from toaster.passes import pass_

_RANGE = ("<", "<=", ">", ">=", "!=")


def _unwrap(e):
    """E's product under AggSum([], AggSum([], ...)) wrappers, or None."""
    while isinstance(e, AggSum) and not e.group:
        e = e.expr
    if isinstance(e, MapRef):
        return (e,)
    return e.factors if isinstance(e, Prod) else None


def _range_aggregate(lift: Lift, bound_args: set):
    """(M's MapRef, other factors, X) if lift.expr is Σ M[Y] * conditions correlated by a range."""
    fs = _unwrap(lift.expr)
    if fs is None:
        return None
    refs = [f for f in fs if isinstance(f, MapRef)]
    rest = [f for f in fs if not isinstance(f, MapRef)]
    if len(refs) != 1 or not all(isinstance(f, (Cmp, Value)) for f in rest):
        return None
    ref = refs[0]
    y = set(ref.vars)
    x = set()
    for f in rest:
        x |= all_vars(f) - y
    if not x or x & bound_args or len(set(ref.vars)) != len(ref.vars):
        return None
    if not any(isinstance(f, Cmp) and f.op in _RANGE and all_vars(f) & y and all_vars(f) & x for f in rest):
        return None
    return ref, tuple(rest), tuple(sorted(x, key=lambda v: v.name))


class _Rewriter:
    def __init__(self, prog: M3Program):
        self.prog = prog
        self.maps = {m.name: m for m in prog.maps}
        self.doms: dict = {}        # (relation, positions) -> (MapDecl, kept by this pass?)
        self.caches: dict = {}      # (domain, canonical body) -> _Cache
        self.new_maps: list = []
        self.notes: list = []
        self.replaced = {s.target for t in prog.triggers for s in t.statements if s.op == ":="}

    # ------------------------------------------------------------ finding candidates
    def domain(self, outer: MapRef, x: tuple):
        """The DOM map for X through the outer map's single relation, or None."""
        decl = self.maps.get(outer.name)
        if decl is None or not isinstance(decl.definition, AggSum):
            return None
        rels = [r for r in subterms(decl.definition.expr) if isinstance(r, Rel)]
        if len(rels) != 1 or relations(decl.definition) != {rels[0].name}:
            return None
        rel = rels[0]
        rename = dict(zip(outer.vars, decl.keys))
        positions = []
        for v in x:
            k = rename.get(v)
            if k is None or k not in rel.vars:
                return None
            positions.append(rel.vars.index(k))
        key = (rel.name, tuple(positions))
        if key not in self.doms:
            cols = self.prog.relation(rel.name).columns
            rvars = [Var(f"__DOM{len(self.doms) + 1}_{c.name}", c.type) for c in cols]
            keys = tuple(rvars[p] for p in positions)
            definition = AggSum(keys, Rel(rel.name, tuple(rvars)))
            same = canonical(definition, keys)
            decl = next((m for m in self.prog.maps if canonical(m.definition, m.keys) == same), None)
            if decl is None:            # a new count map, kept by this pass
                name = self._fresh(f"{_query_prefix(outer.name)}_dom{len(self.doms) + 1}")
                decl = MapDecl(name, keys, INT, definition)
                self.new_maps.append(decl)
            self.doms[key] = (decl, decl in self.new_maps)
        return key

    def _fresh(self, name: str) -> str:
        taken = set(self.maps) | {m.name for m in self.new_maps}
        n, out = 1, name
        while out in taken:
            n += 1
            out = f"{name}_{n}"
        return out

    def cache_for(self, lift: Lift, outer_refs, bound_args, scope: set):
        found = _range_aggregate(lift, bound_args)
        if found is None:
            return None
        ref, conds, x = found
        if set(ref.vars) & scope:
            return None                 # a key of M is bound outside: correlated by equality too
        if ref.name in self.replaced or ref.name not in self.maps:
            return None
        for outer in outer_refs:
            if set(x) <= set(outer.vars):
                dom = self.domain(outer, x)
                if dom is not None:
                    break
        else:
            return None
        ydecl = self.maps[ref.name]
        canon_x = tuple(Var(f"__X{i}", v.type) for i, v in enumerate(x))
        body = subst(Prod((ref,) + conds), dict(zip(x, canon_x)))
        key = (dom, repr(body))
        if key not in self.caches:
            ddecl, _ = self.doms[dom]
            e_def = _map_definition(ydecl, ref)
            definition = AggSum(x, Prod(_in_domain(_map_definition(ddecl, MapRef(ddecl.name, x, INT), "__D_"))
                                        + (AggSum((), mk_prod((e_def,) + conds)),)))
            name = self._fresh(f"{_query_prefix(ref.name)}_cache{len(self.caches) + 1}")
            decl = MapDecl(name, x, expr_type(lift.expr), definition)
            self.caches[key] = _Cache(decl, dom, ref, conds, x)
            self.new_maps.append(decl)
            self.notes.append(f"{name}[{', '.join(v.name for v in x)}]: view cache of the range-correlated nested "
                              f"aggregate over {ref.name} (domain {ddecl.name}; VLDBJ'14 §5.2)")
        c = self.caches[key]
        return Lift(lift.var, MapRef(c.decl.name, x, c.decl.type))

    # --------------------------------------------------------------- rewriting reads
    def rewrite(self, e, bound_args: set, scope: set | None = None):
        """e with its range-correlated lifts replaced by cache lookups; `scope`: the variables
        bound around e (trigger arguments, outputs of enclosing factors)."""
        scope = set(bound_args) if scope is None else scope
        match e:
            case Prod(fs):
                outs = [schema(f, bound_args)[1] for f in fs]
                inner = [scope.union(*(o for k, o in enumerate(outs) if k != i)) for i in range(len(fs))]
                fs = tuple(self.rewrite(f, bound_args, inner[i]) for i, f in enumerate(fs))
                outer_refs = [f for f in fs if isinstance(f, MapRef)]
                out = []
                for i, f in enumerate(fs):
                    if isinstance(f, Lift) and outer_refs:
                        f = self.cache_for(f, outer_refs, bound_args, inner[i]) or f
                    out.append(f)
                return Prod(tuple(out))
            case Sum(ts):
                return Sum(tuple(self.rewrite(t, bound_args, scope) for t in ts))
            case AggSum(gs, q):
                return AggSum(gs, self.rewrite(q, bound_args, scope))
        return e

    # ------------------------------------------------------------ maintaining caches
    def maintenance(self, trig: Trigger) -> list | None:
        """The statements keeping every cache exact in this trigger, or None if one cannot."""
        out, args = [], set(trig.event.args)
        sign = trig.event.sign
        if trig.event.kind not in ("insert", "delete"):
            touched = {c.ref.name for c in self.caches.values()}
            return None if any(s.target in touched for s in trig.statements) else []
        for (rel, positions), (ddecl, kept_here) in self.doms.items():
            if kept_here and rel == trig.event.relation:
                keys = tuple(trig.event.args[p] for p in positions)
                out.append(Statement(ddecl.name, keys, "+=", AggSum((), Value(Const(sign, INT)))))
        for c in self.caches.values():
            ddecl, _ = self.doms[c.dom]
            for s in trig.statements:
                if s.target != c.ref.name:
                    continue
                if s.op != "+=" or _reads_maps(s.rhs) or (all_vars(s.rhs) - args) & set(c.x):
                    return None
                if any(not isinstance(k, Var) or k not in args for k in s.keys):
                    return None
                # the conditions first, so that keys out of the range are skipped before any work
                conds = tuple(subst(f, dict(zip(c.ref.vars, s.keys))) for f in c.conds)
                out.append(Statement(c.decl.name, c.x, "+=", AggSum(c.x, Prod(
                    _in_domain(MapRef(ddecl.name, c.x, INT)) + conds + (s.rhs,)))))
            if c.dom[0] == trig.event.relation:
                x0 = tuple(trig.event.args[p] for p in c.dom[1])
                at = dict(zip(c.x, x0))
                exact = AggSum((), Prod(_in_domain(MapRef(ddecl.name, x0, INT))
                                        + (AggSum((), mk_prod((c.ref,) + tuple(subst(f, at) for f in c.conds))),)))
                minus = Prod((Value(Const(-1, INT)), MapRef(c.decl.name, x0, c.decl.type)))
                out.append(Statement(c.decl.name, x0, "+=", Sum((exact, minus))))
        return out


@dataclass(frozen=True, slots=True)
class _Cache:
    decl: MapDecl        # the cache map
    dom: tuple           # its domain's key in _Rewriter.doms: (relation, column positions)
    ref: MapRef          # the nested sum's map, as the statement reads it
    conds: tuple         # the nested sum's conditions and values
    x: tuple             # the correlation variables (the cache's keys)


def _in_domain(count) -> tuple:
    """Factors keeping the keys where the count (a domain map or its definition) is not 0."""
    d = Var("__dom", INT)
    return (Lift(d, count), Cmp("!=", d, Const(0, INT)))


def _reads_maps(e) -> bool:
    return any(isinstance(a, MapRef) for a in subterms(e))


def _map_definition(decl: MapDecl, ref: MapRef, prefix: str = "__C_"):
    """decl's definition as an expression over ref's variables (its other variables renamed apart)."""
    body = decl.definition.expr if isinstance(decl.definition, AggSum) else decl.definition
    names = dict(zip(decl.keys, ref.vars))
    for v in all_vars(body):
        if v not in names:
            names[v] = Var(f"{prefix}{v.name}", v.type)
    return AggSum(tuple(ref.vars), subst(body, names))


def _query_prefix(name: str) -> str:
    return name.split("_m")[0] if "_m" in name else name


def view_cache(prog: M3Program) -> M3Program:
    if prog.mode != "tuple":
        return _decompose_range_reevaluations(prog)
    rw = _Rewriter(prog)
    triggers = []
    for t in prog.triggers:
        args = set(t.event.args)
        stmts = []
        for s in t.statements:
            if s.op == ":=":
                # decomposed with or without a cache: PSP's two books (uncorrelated nested sums,
                # no cache) were one nested loop over both volume domains per event
                s = Statement(s.target, s.keys, s.op, decompose(rw.rewrite(s.rhs, args)))
            stmts.append(s)
        triggers.append(Trigger(t.event, tuple(stmts)))
    if not rw.caches:
        triggers = tuple(triggers)
        return prog if triggers == prog.triggers else M3Program(
            prog.relations, prog.maps, triggers, prog.queries, prog.mode, notes=prog.notes)
    out = []
    for t in triggers:
        extra = rw.maintenance(t)
        if extra is None:
            return prog                 # a cache this trigger cannot keep exact: leave the program
        readers = {c.decl.name for c in rw.caches.values()}
        at = next((i for i, s in enumerate(t.statements) if _reads(s.rhs, readers)), len(t.statements))
        written = {s.target for s in t.statements[at:]}
        if written & ({c.ref.name for c in rw.caches.values()} | {d.name for d, _ in rw.doms.values()}):
            return prog                 # the cached map changes after the cache is read
        out.append(Trigger(t.event, t.statements[:at] + tuple(extra) + t.statements[at:]))
    return M3Program(prog.relations, prog.maps + tuple(rw.new_maps), tuple(out), prog.queries, prog.mode,
                     notes=prog.notes + tuple(rw.notes))


def decompose(e):
    """AggSum(G, A * B) = AggSum(G∩A, A) * AggSum(G∩B, B) when A and B share no variable (VLDBJ'14
    §5.1, query decomposition): MST's two independent books become two loops, not one nested loop."""
    match e:
        case AggSum(gs, Prod(fs)):
            fs = tuple(decompose(f) for f in fs)
            parts = _components(fs)
            if len(parts) < 2:
                return AggSum(gs, Prod(fs))
            return Prod(tuple(AggSum(tuple(g for g in gs if g in set().union(*map(all_vars, p))), mk_prod(p))
                              for p in parts))
        case AggSum(gs, q):
            return AggSum(gs, decompose(q))
        case Sum(ts):
            return Sum(tuple(decompose(t) for t in ts))
    return e


def _components(fs) -> list:
    """Factors grouped by shared variables (factors without variables join the first group)."""
    groups: list = []                   # [(vars, [factors])]
    closed = []
    for f in fs:
        vs = all_vars(f)
        if not vs:
            closed.append(f)
            continue
        touching = [g for g in groups if g[0] & vs]
        merged = (set(vs), [])
        for g in touching:
            merged[0].update(g[0])
            merged[1].extend(g[1])
            groups.remove(g)
        merged[1].append(f)
        groups.append(merged)
    parts = [tuple(sorted(g[1], key=fs.index)) for g in groups]
    if parts:
        parts[0] = tuple(closed) + parts[0]
    return parts or [tuple(closed)]


def _decompose_range_reevaluations(prog: M3Program) -> M3Program:
    """Batch mode: no caches (a batch re-evaluates once), but the re-evaluation of a query with a
    range-correlated nested aggregate is decomposed, so that independent outer loops are not nested."""
    def ranged(e) -> bool:
        return any(isinstance(a, Lift) and _range_aggregate(a, set()) for a in _lifts(e))

    triggers = tuple(Trigger(t.event, tuple(Statement(s.target, s.keys, s.op, decompose(s.rhs))
                                            if s.op == ":=" and ranged(s.rhs) else s for s in t.statements))
                     for t in prog.triggers)
    return prog if triggers == prog.triggers else M3Program(prog.relations, prog.maps, triggers, prog.queries,
                                                             prog.mode, notes=prog.notes)


def _lifts(e):
    match e:
        case Prod(fs) | Sum(fs):
            for f in fs:
                yield from _lifts(f)
        case AggSum(_, q):
            yield from _lifts(q)
        case Lift(_, q):
            yield e
            yield from _lifts(q)


def _reads(e, names: set) -> bool:
    return any(isinstance(a, MapRef) and a.name in names for a in subterms(e))


@pass_("m3_view_cache", "m3")
def m3_view_cache(program: M3Program, options=None) -> M3Program:
    """View caches for nested aggregates correlated by a range (VLDBJ'14 §5.2): O(n) per event, not O(n^2);
    closed sums a trigger reads but cannot change kept in scalar maps (closed_cache.py)."""
    from toaster.m3.closed_cache import cache_closed_sums
    return cache_closed_sums(view_cache(program))
