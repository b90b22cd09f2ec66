"""imp -> imp pass 'imp_guard_loops': skip a slice loop when a factor of all it writes is 0.

A statement of M3 such as TPC-H Q17's

    QUERY[] += AggSum([], mLINEITEM1[pk, qty] * mPART2[pk] * (sub ^= ...) * {qty < sub})

lowers to a ForEach over the slice mLINEITEM1[pk, *] whose every write is multiplied by
mPART2[pk], a lookup that does not depend on the loop. mPART2[pk] is 0 for all but 1 part in
1,000 (the brand/container filter), yet each LINEITEM tuple walks its part's slice twice (~60
entries at SF 0.1): the loops were ~80 % of Q17's tuple-mode maintenance. This pass evaluates such
a factor once before the loop and runs the loop only when it is nonzero:

    int guard_1 = mPART2[pk];
    if (guard_1 != 0) { foreach ([pk, k] -> v in mLINEITEM1) { ... v * (float)guard_1 ... } }

A candidate factor is a map lookup (MapGet, possibly under a Cast) that is a factor of the value
of every MapAdd in the loop's body (the body made of If and MapAdd only), whose keys read no
variable the loop binds and whose map the body does not write. Skipping the loop is then exact:
each skipped write would have added 0 (for floats, v * 0.0 = 0 for every finite v; the views hold
finite sums), and adding 0 changes no map (a new key with value 0 is not stored).
"""
from __future__ import annotations

from dataclasses import replace

from toaster.imperative.ir import BinOp, Cast, Declare, ForEach, If, ImpProgram, Lit, LocalRef, MapAdd, MapGet
from toaster.passes import pass_
from toaster.types import BOOL, FLOAT


def _factors(e) -> list:
    if isinstance(e, BinOp) and e.op == "*":
        return _factors(e.left) + _factors(e.right)
    return [e]


def _locals(e) -> set:
    """Names of the locals an expression reads."""
    if isinstance(e, LocalRef):
        return {e.name}
    out = set()
    for child in _children(e):
        out |= _locals(child)
    return out


def _children(e) -> tuple:
    match e:
        case BinOp(_, a, b, _):
            return (a, b)
        case Cast(_, a):
            return (a,)
        case MapGet(_, keys, _):
            return tuple(keys)
    args = getattr(e, "args", None)
    if isinstance(args, tuple):
        return args
    arg = getattr(e, "arg", None)
    return (arg,) if arg is not None else ()


def _substitute(e, old, new):
    """e with every occurrence of the expression `old` replaced by `new`."""
    if e == old:
        return new
    match e:
        case BinOp(op, a, b, t):
            return BinOp(op, _substitute(a, old, new), _substitute(b, old, new), t)
        case Cast(t, a):
            return Cast(t, _substitute(a, old, new))
        case MapGet(m, keys, t):
            return MapGet(m, tuple(_substitute(k, old, new) for k in keys), t)
    if isinstance(getattr(e, "args", None), tuple):
        return replace(e, args=tuple(_substitute(a, old, new) for a in e.args))
    if getattr(e, "arg", None) is not None:
        return replace(e, arg=_substitute(e.arg, old, new))
    return e


def _substitute_stmts(stmts, old, new) -> tuple:
    out = []
    for s in stmts:
        match s:
            case If(c, then, orelse):
                out.append(If(_substitute(c, old, new), _substitute_stmts(then, old, new),
                              _substitute_stmts(orelse, old, new)))
            case MapAdd(m, keys, v):
                out.append(MapAdd(m, tuple(_substitute(k, old, new) for k in keys), _substitute(v, old, new)))
            case _:
                raise AssertionError(f"imp_guard_loops: unexpected statement {s!r}")
    return tuple(out)


def _writes(stmts) -> list | None:
    """The MapAdds of a body made only of If and MapAdd statements, else None."""
    out = []
    for s in stmts:
        match s:
            case MapAdd():
                out.append(s)
            case If(_, then, orelse):
                inner = _writes(then + orelse)
                if inner is None:
                    return None
                out += inner
            case _:
                return None
    return out


def _guard_factor(loop: ForEach):
    """The first loop-invariant map lookup that is a factor of every write of the loop, or None."""
    writes = _writes(loop.body)
    if not writes:
        return None
    bound = {k.name for k in loop.key_vars if k is not None} | {loop.value_var.name}
    written = {w.map for w in writes}
    common = None
    for w in writes:
        fs = [f for f in _factors(w.value)
              if isinstance(f.arg if isinstance(f, Cast) else f, MapGet)]
        common = fs if common is None else [f for f in common if f in fs]
    for f in common or ():
        get = f.arg if isinstance(f, Cast) else f
        if get.map not in written and not (_locals(f) & bound):
            return f
    return None


class FreshLocals:
    """Names new locals for one trigger body, never one the body already uses."""

    def __init__(self, names: set, prefix: str):
        self.names, self.prefix, self.count = names, prefix, 0

    def fresh(self) -> str:
        while True:
            self.count += 1
            name = f"{self.prefix}{self.count}"
            if name not in self.names:
                self.names.add(name)
                return name


def rewrite_bodies(program: ImpProgram, rewriter) -> ImpProgram:
    """program with each trigger body replaced by rewriter(names the body uses).block(body)."""
    triggers = tuple(replace(t, body=rewriter(_names(t.body, {p.name for p in t.params})).block(t.body))
                     for t in program.triggers)
    return replace(program, triggers=triggers)


class _Guarder(FreshLocals):
    def __init__(self, names: set):
        super().__init__(names, "guard_")

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            match s:
                case If(c, then, orelse):
                    out.append(If(c, self.block(then), self.block(orelse)))
                case ForEach():
                    s = replace(s, body=self.block(s.body))
                    f = _guard_factor(s)
                    if f is None:
                        out.append(s)
                        continue
                    g = LocalRef(self.fresh(), f.type)
                    zero = Lit(0.0 if f.type == FLOAT else 0, f.type)
                    out.append(Declare(g, f))
                    out.append(If(BinOp("!=", g, zero, BOOL), (replace(s, body=_substitute_stmts(s.body, f, g)),)))
                case _:
                    out.append(s)
        return tuple(out)


def _names(stmts, out: set) -> set:
    for s in stmts:
        match s:
            case Declare(v, _):
                out.add(v.name)
            case If(_, then, orelse):
                _names(then + orelse, out)
            case ForEach(_, _, key_vars, value_var, body):
                out.update(k.name for k in key_vars if k is not None)
                out.add(value_var.name)
                _names(body, out)
    return out


@pass_("imp_guard_loops", "imp", "imp")
def imp_guard_loops(program: ImpProgram, options=None) -> ImpProgram:
    """Run a slice loop only when a loop-invariant map lookup that multiplies all its writes is nonzero."""
    return rewrite_bodies(program, _Guarder)

