"""Higher-order IVM: the viewlet transform with materialization decisions (VLDBJ'14 §4-5).

For every map (starting with the query maps) and every update event of a relation it reads:
  1. take the delta of its definition and simplify it into monomials (unification binds the
     trigger's tuple into the expression),
  2. extract range restrictions on the map's keys into the statement's target key,
  3. decompose each monomial: relation atoms connected by unbound variables form components;
     each component (with the conditions and values that only it mentions) is materialized as
     an auxiliary map keyed by the bound variables it uses and the variables needed outside;
     a component whose bound variables sit in different atoms (a cycle through the updated
     relation, TPC-H Q5) is first cut at a join variable into parts joined in the statement,
     so that no map is keyed by a cross product (materialize.py: split_cyclic),
  4. reuse an existing map when the new definition equals one up to variable renaming,
  5. recurse on every new map.
Degrees drop at each level (Theorem 1), so this terminates. Statements of one trigger are
ordered with a dependency graph so that each map is read before it is written.
"""
from __future__ import annotations

from toaster.recursion import deep
from collections import deque


from toaster.calculus.delta import delta
from toaster.calculus.ir import (AggSum, Cmp, Const, DeltaRel, Extremum, Lift, MapRef, Prod, Rel, Sum, Value,
                                 Var, all_vars, expr_type, is_zero, mk_prod, mk_sum, relations, schema)
from toaster.calculus.toposort import CycleError, lexicographic_topological_order
from toaster.m3.initial import initial_value
from toaster.m3.materialize import (binding_order, components, join_degrees, materialize_nested,
                                    reevaluation_rhs, split_cyclic)
from toaster.m3.ir import Event, M3Program, MapDecl, Statement, Trigger
from toaster.calculus.nested_delta import NotRangeRestricted, is_domain
from toaster.calculus.simplify import Monomial, normalize, simplify_monomials, subst
from toaster.errors import UnsupportedError
from toaster.types import FLOAT, INT


def trigger_args(decl) -> tuple:
    """Trigger argument variables for a relation: lower-case rel_col (query variables are
    upper-case ALIAS_COL, so they never clash)."""
    return tuple(Var(f"{decl.name.lower()}_{c.name.lower()}", c.type) for c in decl.columns)


def events_for(decl, mode: str) -> list:
    if mode == "batch":
        return [Event("batch", decl.name, ())]
    args = trigger_args(decl)
    evs = [Event("insert", decl.name, args)]
    if decl.kind == "stream":
        evs.append(Event("delete", decl.name, args))
    return evs


STRATEGIES = ("hoivm", "ivm", "rep", "naive")


class HOIVMCompiler:
    """Strategies (VLDBJ'14 §8 compares them):
      hoivm  higher-order IVM: deltas materialized recursively, decomposed, shared (default)
      ivm    classic first-order IVM: the query's deltas are evaluated over maps of the base
             relations (same as --depth 1)
      rep    re-evaluation: every query map is recomputed from base-relation maps on each update
      naive  the viewlet transform without query decomposition (identical views are still shared)
    `depth` is how many levels of views are materialized (1: the query only, its deltas read
    base-relation maps, as in first-order IVM; 0: re-evaluation); deeper deltas read base maps.
    """

    def __init__(self, relations, mode: str = "tuple", strategy: str = "hoivm", depth: int | None = None,
                 join_domains: bool = False):
        if mode not in ("tuple", "batch"):
            raise ValueError(f"unknown trigger mode {mode!r}")
        if strategy not in STRATEGIES:
            raise UnsupportedError(f"strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        if depth is not None and depth < 0:
            raise UnsupportedError(f"--depth {depth} (must be 0 or more)")
        self.strategy = strategy
        self.join_domains = join_domains
        self.depth_limit = 1 if strategy == "ivm" and depth is None else depth
        self.depth_of: dict[str, int] = {}
        self.notes: list[str] = []
        self.relations = {r.name: r for r in relations}
        self.relation_order = [r.name for r in relations]
        self.mode = mode
        self.maps: dict[str, MapDecl] = {}
        self.root: dict[str, str] = {}
        self.by_canon: dict[str, str] = {}
        self.counter: dict[str, int] = {}
        self.statements: dict[Event, list] = {}
        self.pending: list[MapDecl] = []     # maps registered but not compiled yet
        self.by_body: dict = {}               # (canonical body, key set) -> (map, key order)
        self.join_degrees: dict = {}          # (relation, column) -> atoms sharing it (materialize.py)

    def _compile_map(self, m: MapDecl) -> None:
        body = m.definition.expr if isinstance(m.definition, AggSum) else m.definition
        if m.role == "query" and (self.strategy == "rep" or self.depth_limit == 0):
            self.notes.append(f"{m.name}: strategy {self.strategy} -> re-evaluated from base-relation maps")
            self._reevaluate(m, body, relations(body))
            return
        # updates to a relation read inside a nested aggregate change (x := Q). Where the update
        # binds an equality-correlation variable of every such aggregate, the revised delta rule
        # restricts the delta to the bindings it names (nested_delta.py): incremental. Otherwise
        # (uncorrelated, inequality-correlated, nested MIN/MAX) the delta is not simpler than the
        # query, and those events re-evaluate the map over decorrelated maps.
        inner = nested_relations(body)
        deltas, reeval = {}, set()
        for rel in self.relation_order:
            if rel not in relations(body):
                continue
            for ev in events_for(self.relations[rel], self.mode):
                if rel in inner and self.strategy == "naive":
                    reeval.add(rel)   # naive: no range restrictions extracted (VLDBJ'14 §8)
                    continue
                try:
                    deltas[ev] = delta(body, ev, revised=True, join_domains=self.join_domains)
                except NotRangeRestricted:
                    reeval.add(rel)
        if inner:
            incremental = sorted(inner - reeval)
            self.notes.append(
                f"{m.name}: nested aggregate over {', '.join(sorted(inner))} -> "
                + (f"re-evaluated on updates to {', '.join(sorted(reeval))}" if reeval else "")
                + ("; " if reeval and incremental else "")
                + (f"incremental on updates to {', '.join(incremental)} (equality-correlated, "
                   "range-restricted delta)" if incremental else ""))
        if reeval:
            self._reevaluate(m, body, reeval)
        for ev, d in deltas.items():
            if ev.relation in reeval or is_zero(d):
                continue
            bound = set(ev.args)
            for mono in simplify_monomials(d, set(m.keys) | bound):
                stmt = self._statement(m, ev, mono, bound)
                if stmt is not None:
                    self.statements.setdefault(ev, []).append(stmt)

    def _reevaluate(self, m: MapDecl, body, on: set) -> None:
        """Nested aggregates: the delta of (x := Q) is not simpler than the query (VLDBJ'14
        §5.1), so this map is re-evaluated after every update, over materialized maps
        (materialize.py; the PSP plan of §6.2). The `rep` strategy re-evaluates from maps of
        the base relations instead."""
        if self.strategy == "rep" or self.depth_limit == 0:
            rhs = AggSum(tuple(m.keys), self._over_base_maps(body))
        else:
            rhs = reevaluation_rhs(self, m, body, m.keys)
        for rel in self.relation_order:
            if rel not in on:
                continue
            for ev in events_for(self.relations[rel], self.mode):
                self.statements.setdefault(ev, []).append(Statement(m.name, tuple(m.keys), ":=", rhs))

    def _over_base_maps(self, e):
        """e with every relation atom replaced by a reference to a map holding the relation."""
        match e:
            case Rel(n, vs):
                return MapRef(self._base_map(n), vs, INT)
            case Sum(ts):
                return Sum(tuple(self._over_base_maps(t) for t in ts))
            case Prod(fs):
                return Prod(tuple(self._over_base_maps(f) for f in fs))
            case AggSum(gs, q):
                return AggSum(gs, self._over_base_maps(q))
            case Lift(v, q):
                return Lift(v, self._over_base_maps(q))
            case Extremum(kind, gs, t, q):
                return Extremum(kind, gs, t, self._over_base_maps(q))
        return e

    def _base_map(self, rel: str) -> str:
        """BASE_<rel>[columns] holds relation rel (its own map: a query map with the same
        definition may be the one being re-evaluated from it)."""
        name = f"BASE_{rel}"
        if name not in self.maps:
            decl = self.relations[rel]
            keys = tuple(Var(f"{rel}_{c.name}", c.type) for c in decl.columns)
            self.maps[name] = MapDecl(name, keys, INT, AggSum(keys, Rel(rel, keys)), "aux")
            self.root[name] = name
            self.depth_of[name] = 0
            self.pending.append(self.maps[name])
        return name

    # -------------------------------------------------------------- statement
    def _statement(self, m: MapDecl, ev: Event, mono: Monomial, bound: set):
        keys = list(m.keys)
        factors = list(mono.factors)
        coef = mono.coef
        # Range restrictions on the target's keys: key := trigger variable moves into the key.
        changed = True
        while changed:
            changed = False
            for f in factors:
                s = _key_restriction(f, keys, bound)
                if s is None:
                    continue
                factors = [subst(g, s) for g in factors if g is not f]
                keys = [s.get(k, k) for k in keys]
                changed = True
                break
        renorm = normalize(factors, frozenset(set(keys) | bound))
        if renorm is None:
            return None
        coef, factors = coef * renorm.coef, list(renorm.factors)
        # a lift of an already-bound variable is an equality test; say so
        factors = [Cmp("=", f.var, f.expr.term) if isinstance(f, Lift) and f.var in bound
                   and isinstance(f.expr, Value) else f for f in factors]
        rhs_factors = self._decompose(m, factors, keys, bound)
        if coef != 1:
            rhs_factors.insert(0, Value(Const(coef, FLOAT if isinstance(coef, float) else INT)))
        free = tuple(k for k in keys if k not in bound)
        rhs = AggSum(free, mk_prod(rhs_factors))
        return Statement(m.name, tuple(keys), "+=", rhs)

    def _decompose(self, m: MapDecl, factors, keys, bound) -> list:
        # delta atoms and batch domains (nested_delta.py) run first: they bind the variables
        # every map lookup after them is restricted to
        deltas = [f for f in factors if isinstance(f, DeltaRel) or is_domain(f)]
        rels = [f for f in factors if isinstance(f, Rel)]
        others = [f for f in factors if not isinstance(f, (DeltaRel, Rel)) and f not in deltas]
        # variables whose values are known before any map is read
        known = set(bound)
        for d in deltas:
            known |= schema(d, known)[1]
        grew = True
        while grew:
            grew = False
            for f in others:
                if isinstance(f, Lift) and f.var not in known and all_vars(f.expr) <= known:
                    known.add(f.var)
                    grew = True
        comps = [rels] if self.strategy == "naive" and rels else components(rels, known)
        comp_vars = [set().union(*(set(r.vars) for r in c)) - known for c in comps]
        assigned = [[] for _ in comps]
        outside = []
        comp_atom_vars = [set().union(*(set(r.vars) for r in c)) for c in comps]
        # a nested aggregate correlated only with one component, on equalities, is materialized
        # with it (VLDBJ'14 §6.1: Q18a's Q_C): the map keeps it incrementally on its own
        placed = set()
        for f in others:
            home = self._nested_home(f, others, comp_vars, known, keys)
            if home is not None:
                assigned[home].append(f)
                comp_vars[home].add(f.var)
                placed.add(id(f))
        for f in others:
            if id(f) in placed:
                continue
            fv = all_vars(f) - known
            # a condition may move into a component only if every bound variable it uses is
            # also an atom argument there (else the map would need an input variable: keep
            # the condition outside and the component's variable as a map key instead)
            homes = [i for i, cv in enumerate(comp_vars)
                     if fv and fv <= cv and (all_vars(f) & known) <= comp_atom_vars[i]]
            if len(homes) == 1 and not isinstance(f, Lift) and not relations(f):
                assigned[homes[0]].append(f)
            else:
                outside.append(f)
        needed = set(keys)
        for f in outside:
            needed |= all_vars(f)
        refs = []
        deep = self.depth_limit is not None and self.depth_of.get(m.name, 0) + 1 >= self.depth_limit
        for comp, cv, extra in zip(comps, comp_vars, assigned):
            if deep:
                # beyond the materialization depth: join maps of the base relations instead
                refs.append(self._over_base_maps(mk_prod(comp + extra)))
                continue
            split = None if self.strategy == "naive" else split_cyclic(comp, extra, known, needed)
            if split is None:
                refs.append(self._materialize_component(m, comp + extra, cv, known, needed, keys))
                continue
            # a cycle through the updated relation: one map per part, joined on the cut
            cut, parts = split
            self.notes.append(f"{m.name}: cuts a cyclic component ({', '.join(r.name for r in comp)}) "
                              f"at {', '.join(v.name for v in cut)}")
            part_refs = []
            for atoms, part_extra in parts:
                part_vars = set().union(*(set(r.vars) for r in atoms)) - known
                part_refs.append(self._materialize_component(m, atoms + part_extra, part_vars, known,
                                                             needed | set(cut), keys))
            refs += binding_order(part_refs, known, rels, self.join_degrees)
        early_lifts = [f for f in outside if isinstance(f, Lift) and all_vars(f.expr) <= known
                       and not relations(f.expr)]
        rest = [f for f in outside if f not in early_lifts]
        if any(relations(f) for f in rest):
            # nested aggregates read decorrelated maps; the variables bound before them (the
            # trigger's, the components') are their correlation
            seen = set(known) | set().union(*comp_vars) if comp_vars else set(known)
            out = []
            for f in rest:
                if relations(f):
                    f = materialize_nested(self, m, f, frozenset(seen))
                seen |= schema(f, seen)[1]
                out.append(f)
            rest = out
        return deltas + early_lifts + refs + rest

    def _nested_home(self, f, others, comp_vars, known, keys) -> int | None:
        """The component a nested aggregate factor f moves into, or None: f's correlation
        variables all belong to one component (none is bound by the trigger) and every update
        to the relations it reads binds one of them through an equality."""
        if self.strategy == "naive" or not isinstance(f, Lift) or not relations(f.expr):
            return None
        around = set(keys) | set(known) | set().union(*comp_vars)
        for g in others:
            if g is not f:
                around |= all_vars(g)
        corr = all_vars(f.expr) & around
        if not corr or corr & known:
            return None
        homes = [i for i, cv in enumerate(comp_vars) if corr <= cv]
        if len(homes) != 1:
            return None
        for rel in relations(f.expr):
            for ev in events_for(self.relations[rel], self.mode):
                try:
                    delta(f, ev, revised=True, bound=frozenset(corr), join_domains=self.join_domains)
                except NotRangeRestricted:
                    return None
        return homes[0]

    def _materialize_component(self, m, factors, comp_vars, known, needed, keys) -> MapRef:
        in_vars = _ordered_vars(factors, lambda v: v in known)
        out_vars = [k for k in keys if k in comp_vars] + \
            [v for v in _ordered_vars(factors, lambda v: v in comp_vars and v in needed) if v not in keys]
        renaming = self.key_renaming(factors, in_vars)
        body = mk_prod([subst(f, renaming) for f in factors])
        map_keys = tuple(renaming[v] for v in in_vars) + tuple(out_vars)
        definition = AggSum(map_keys, body)
        args = tuple(in_vars) + tuple(out_vars)
        name, order = self._register(definition, map_keys, m)
        return MapRef(name, tuple(args[i] for i in order), self.maps[name].type)

    def _register(self, definition, keys, parent: MapDecl) -> tuple[str, tuple]:
        """The map holding `definition` (an existing one if equal up to renaming and key
        order) and, for each of its key positions, the index of the matching entry of keys."""
        body_text, key_names = canonical_body(definition, keys)
        canon = canonical(definition, keys)
        share = True  # identical views are shared under every strategy (naive included)
        hit = self.by_body.get((body_text, frozenset(key_names))) if share else None
        if hit is not None:
            name, their_keys = hit
            self.notes.append(f"{parent.name}: reuses {name} (duplicate view up to renaming)")
            return name, tuple(key_names.index(k) for k in their_keys)
        if share and canon in self.by_canon:
            return self.by_canon[canon], tuple(range(len(keys)))
        rels = "".join(r.name for r in _atoms(definition))
        if parent is _BASE_PARENT:
            name = f"BASE_{rels}"
        else:
            root = self.root[parent.name]
            self.counter[root] = self.counter.get(root, 0) + 1
            name = f"{root}_m{rels}{self.counter[root]}"
        decl = MapDecl(name, tuple(keys), expr_type(definition), definition, "aux")
        self.maps[name] = decl
        self.root[name] = name if parent is _BASE_PARENT else root
        self.depth_of[name] = 0 if parent is _BASE_PARENT else self.depth_of.get(parent.name, 0) + 1
        if parent is not _BASE_PARENT:
            self.notes.append(f"{parent.name}: materializes {name}[{', '.join(k.name for k in keys)}]")
        self.by_canon[canon] = name
        self.by_body[(body_text, frozenset(key_names))] = (name, key_names)
        self.pending.append(decl)
        return name, tuple(range(len(keys)))

    def key_renaming(self, factors, in_vars) -> dict:
        """Bound variables (trigger arguments, correlation variables) become key variables of
        the map named after the column they fill, never a trigger argument's name (a map's
        definition must not mention the variables of the triggers that maintain it)."""
        taken = set().union(*(all_vars(f) for f in factors))
        renaming = {}
        for v in in_vars:
            name = self._column_name(factors, v) or v.name.upper()
            cand, n = name, 2
            while any(x.name == cand and x != v for x in taken):
                cand = f"{name}_{n}"
                n += 1
            nv = Var(cand, v.type)
            taken.add(nv)
            renaming[v] = nv
        return renaming

    def _column_name(self, factors, v) -> str | None:
        """REL_COL of the first relation atom position where v occurs."""
        for f in factors:
            if isinstance(f, Rel) and v in f.vars:
                col = self.relations[f.name].columns[f.vars.index(v)]
                return f"{f.name}_{col.name}"
        return None


_BASE_PARENT = MapDecl("BASE", (), INT, None, "aux")


def nested_relations(e) -> set:
    """Relations read inside a lift or extremum (a nested aggregate) of e."""
    match e:
        case Lift(_, q) | Extremum(_, _, _, q):
            return relations(q)
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= nested_relations(t)
            return out
        case AggSum(_, q):
            return nested_relations(q)
    return set()


def _key_restriction(f, keys, bound) -> dict | None:
    match f:
        case Lift(k, Value(b)) if isinstance(b, Var) and k in keys and k not in bound and b in bound:
            return {k: b}
        case Cmp("=", k, b) if isinstance(k, Var) and isinstance(b, Var) and k.type == b.type:
            if k in keys and k not in bound and b in bound:
                return {k: b}
            if b in keys and b not in bound and k in bound:
                return {b: k}
    return None


def _ordered_vars(factors, pred) -> list:
    out = []
    for f in factors:
        for v in _vars_in_order(f):
            if pred(v) and v not in out:
                out.append(v)
    return out


def _vars_in_order(e) -> list:
    match e:
        case Rel(_, vs) | DeltaRel(_, vs) | MapRef(_, vs, _):
            return list(vs)
        case Lift(v, q):
            return [v] + _vars_in_order(q)
        case Sum(ts) | Prod(ts):
            out = []
            for t in ts:
                out += _vars_in_order(t)
            return out
        case AggSum(gs, q):
            return list(gs) + _vars_in_order(q)
    return sorted(all_vars(e), key=lambda v: v.name)


def _atoms(e) -> list:
    match e:
        case Rel():
            return [e]
        case Sum(ts) | Prod(ts):
            out = []
            for t in ts:
                out += _atoms(t)
            return out
        case AggSum(_, q) | Lift(_, q):
            return _atoms(q)
    return []


def canonical(definition, keys) -> str:
    """The definition's text with variables renamed by position (keys first): two maps with
    equal canonical text hold the same data."""
    from toaster.calculus.printer import print_expr
    names = {}
    for i, k in enumerate(keys):
        names[k] = Var(f"__k{i}", k.type)
    n = 0
    for v in _vars_in_order(definition):
        if v not in names:
            names[v] = Var(f"__v{n}", v.type)
            n += 1
    renamed = subst(definition, names)
    types = ",".join(str(k.type) for k in keys)
    return f"[{types}] {print_expr(renamed)}"


def canonical_body(definition, keys) -> tuple[str, tuple]:
    """The body's text with variables renamed by order of appearance in the body, and the
    keys' canonical names: equal texts with equal key sets hold the same data up to key order."""
    from toaster.calculus.printer import print_expr
    body = definition.expr if isinstance(definition, AggSum) else definition
    names = {}
    for v in _vars_in_order(body):
        if v not in names:
            names[v] = Var(f"__v{len(names)}:{v.type}", v.type)
    for k in keys:
        if k not in names:
            names[k] = Var(f"__v{len(names)}:{k.type}", k.type)
    return print_expr(subst(body, names)), tuple(names[k].name for k in keys)


def order_statements(stmts) -> list:
    """Order statements so that incremental (+=) statements read every map before it is
    written (they add a delta to the old state), and re-evaluations (:=) read it after (they
    recompute from the new state)."""
    edges = []
    writers: dict = {}       # map -> the statements writing it (not every pair: 5,000-way ORs)
    for j, s in enumerate(stmts):
        writers.setdefault(s.target, []).append(j)
    for i, s in enumerate(stmts):
        for name in _maps_read(s.rhs):
            if name == s.target and s.op == ":=":
                continue
            # a += statement reading its own map (a domain-restricted `-(x := Q)` whose Q is the
            # map's own definition) reads it before the map's other statements write it
            for j in writers.get(name, ()):
                if j != i:
                    edges.append((j, i) if s.op == ":=" else (i, j))
    try:
        order = lexicographic_topological_order(len(stmts), edges)
    except CycleError:
        raise UnsupportedError("cyclic map dependencies inside one trigger") from None
    return [stmts[i] for i in order]


def _maps_read(e) -> set:
    match e:
        case MapRef(n, _, _):
            return {n}
        case Sum(ts) | Prod(ts):
            out = set()
            for t in ts:
                out |= _maps_read(t)
            return out
        case AggSum(_, q) | Lift(_, q) | Extremum(_, _, _, q):
            return _maps_read(q)
    return set()


@deep("the calculus program (calc_to_m3)")
def compile_hoivm(calc_program, mode: str = "tuple", strategy: str = "hoivm",
                  depth: int | None = None, join_domains: bool = False) -> M3Program:
    """The `hoivm` lowering: calc program (query maps) -> M3 trigger program."""
    c = HOIVMCompiler(calc_program.relations, mode, strategy, depth, join_domains)
    c.join_degrees = join_degrees(m.definition for m in calc_program.maps)
    queue = deque()
    for m in calc_program.maps:
        if not relations(m.definition):
            c.notes.append(f"{m.name}: reads no relation -> a constant, set once (ON SYSTEM READY)")
        keys = tuple(m.keys)
        # the definition as the calc stage left it: `simplify_calc` (a pass of its own) normalizes
        # it; every delta below is simplified whatever the definition's form
        body = m.definition.expr if isinstance(m.definition, AggSum) else m.definition
        definition = AggSum(keys, body)
        decl = MapDecl(m.name, keys, m.type, definition, "query")
        c.maps[decl.name] = decl
        c.root[decl.name] = decl.name
        c.by_canon.setdefault(canonical(definition, keys), decl.name)
        queue.append(decl)
    while queue:
        c._compile_map(queue.popleft())
        queue.extend(c.pending)
        c.pending.clear()
    triggers = []
    ready = [s for s in (initial_value(m) for m in c.maps.values()) if s is not None]
    if ready:
        triggers.append(Trigger(Event("ready", "", ()), tuple(ready)))
    trigger_vars = {a for ev in c.statements for a in ev.args}
    for decl in c.maps.values():
        if all_vars(decl.definition) & trigger_vars:
            # a map's definition over a trigger argument would change meaning in that trigger
            raise RuntimeError(f"internal: map {decl.name} is defined over trigger variable(s) "
                               f"{', '.join(sorted(v.name for v in all_vars(decl.definition) & trigger_vars))}")
    for stmts in c.statements.values():
        for s in stmts:
            if relations(s.rhs):
                # trigger programs read maps only: a base relation here is a compiler defect,
                # refused rather than read as empty
                raise RuntimeError(f"internal: a statement of {s.target} reads base relation(s) "
                                   f"{', '.join(sorted(relations(s.rhs)))}")
    for rel in c.relation_order:
        for ev in events_for(c.relations[rel], mode):
            stmts = c.statements.get(ev)
            if stmts:
                triggers.append(Trigger(ev, tuple(order_statements(stmts))))
    return M3Program(tuple(c.relations[r] for r in c.relation_order), tuple(c.maps.values()),
                     tuple(triggers), tuple(calc_program.queries), mode, notes=tuple(c.notes))
