"""K3 -> K3 optimization passes: 'k3_fuse' (the named rewrites of toaster/k3/rewrites) and 'k3_cse'.

`fuse(program, rules)` applies a set of named rewrites bottom-up to a fixpoint; every rewrite
preserves the program's meaning (checked per rule in tests/test_k3.py and
tests/test_pass_fixtures.py, against the M3 reference engine).
"""
from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass, replace

from toaster.errors import UsageError
from toaster.recursion import deep
from toaster.passes import Options, Pass, pass_, register
from toaster.k3.ir import Lambda, Apply, Lookup, K3Program, Var, free_vars
from toaster.k3.rewrites import REWRITES
from toaster.k3.rewrites.terms import is_simple, map_children

# ------------------------------------------------------------- generic rewriting


def bottom_up(e, rule):
    """Rewrite children first, then apply `rule` at the node until it stops changing."""
    e = map_children(e, lambda x: bottom_up(x, rule))
    while True:
        new = rule(e)
        if new is None or new == e:
            return e
        e = map_children(new, lambda x: bottom_up(x, rule))


def rewrite_program(program: K3Program, fn) -> K3Program:
    """Apply fn to every trigger statement; the same program object when nothing changed."""
    triggers = tuple(replace(t, body=tuple(fn(s) for s in t.body)) for t in program.triggers)
    if triggers == program.triggers:
        return program
    return replace(program, triggers=triggers)


# -------------------------------------------------------------------------- fuse


def select_rules(rules: Collection[str] | None = None) -> dict:
    """{node class: [rewrite, ..] in priority order} for the named rules (all when None)."""
    if rules is None:
        chosen = list(REWRITES.values())
    else:
        unknown = sorted(set(rules) - set(REWRITES))
        if unknown:
            raise KeyError(f"unknown K3 rewrite {', '.join(map(repr, unknown))}; "
                           f"known: {', '.join(REWRITES)}")
        chosen = [r for r in REWRITES.values() if r.name in rules]
    by_class: dict = {}
    for r in chosen:
        by_class.setdefault(r.on, []).append(r.fn)
    return by_class


@deep("the K3 program (k3_fuse)")
def fuse(program: K3Program, rules: Collection[str] | None = None) -> K3Program:
    """The program with the named rewrites (all when None) applied bottom-up to a fixpoint.

    Returns `program` itself when no rule applied anywhere."""
    by_class = select_rules(rules)

    def rule(e):
        for fn in by_class.get(type(e), ()):
            new = fn(e)
            if new is not None and new != e:
                return new
        return None

    return rewrite_program(program, lambda s: bottom_up(s, rule))


@register
@dataclass(frozen=True)
class K3Fuse(Pass):
    """Fusion / deforestation and beta reduction: the named K3 rewrites to a fixpoint.

    rules: the rewrites to apply (names from toaster.k3.rewrites.REWRITES); none: all of them.
    """
    name = "k3_fuse"
    takes = "k3"
    gives = "k3"
    description = "fusion / deforestation and beta reduction: the named K3 rewrites to a fixpoint"
    rules: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.rules is not None:
            try:
                select_rules(self.rules)
            except KeyError as e:
                raise UsageError(f"pass k3_fuse, option rules: {e.args[0]}") from None

    def run(self, program: K3Program, options: Options) -> K3Program:
        return fuse(program, self.rules)


def k3_fuse(program: K3Program, options=None) -> K3Program:
    """All the K3 rewrites to a fixpoint (the k3_fuse pass with its default options)."""
    return fuse(program)


# --------------------------------------------------------------------------- cse

def _cse_stmt(stmt, params: set, fresh):
    """Let-bind, once before the statement, lookups that occur more than once in it and are
    keyed only by trigger arguments and constants (their value cannot change inside it: a
    statement never writes a map it reads)."""
    counts: dict = {}

    def visit(x):
        if isinstance(x, Lookup) and all(is_simple(k) for k in x.keys) and free_vars(x) <= params:
            counts[x] = counts.get(x, 0) + 1
        map_children(x, visit)
        return x

    visit(stmt)
    repeated = [l for l, n in counts.items() if n > 1]
    if not repeated:
        return stmt
    names = {l: fresh(l.type) for l in repeated}

    def swap(x):
        return names[x] if x in names else map_children(x, swap)

    return Apply(Lambda(tuple(names[l] for l in repeated), swap(stmt)), tuple(repeated))


def _program_fresh_names(program: K3Program, prefix: str):
    """A maker of variables named prefix1, prefix2, ... that the program does not use yet.

    Numbered per program rather than from the process-wide counter, so that the pass's output
    is the same whatever ran before it in the process."""
    used: set = set()

    def visit(x):
        if isinstance(x, Var):
            used.add(x.name)
        map_children(x, visit)
        return x

    for t in program.triggers:
        used.update(p.name for p in t.params)
        for s in t.body:
            visit(s)
    numbers = itertools.count(1)

    def fresh(type_) -> Var:
        name = f"{prefix}{next(numbers)}"
        while name in used:
            name = f"{prefix}{next(numbers)}"
        used.add(name)
        return Var(name, type_)

    return fresh


@pass_("k3_cse", "k3", "k3")
@deep("the K3 program (k3_cse)")
def k3_cse(program: K3Program, options=None) -> K3Program:
    """Common-subexpression elimination of repeated map lookups keyed by trigger arguments."""
    fresh = _program_fresh_names(program, "_cse")
    triggers = []
    for t in program.triggers:
        params = {p.name for p in t.params}
        triggers.append(replace(t, body=tuple(_cse_stmt(s, params, fresh) for s in t.body)))
    return replace(program, triggers=tuple(triggers))
