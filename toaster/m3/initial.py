"""Initial values of maps (DBToaster's ON SYSTEM READY): a map that is not empty on the empty
database (a constant query; a nested aggregate compared with what it is over no rows, as in
NOT EXISTS) starts from its contents there, and every later statement maintains it from there."""
from __future__ import annotations

from toaster.calculus.evaluator import Database, evaluate
from toaster.calculus.ir import AggSum, Const, Lift, Prod, Rel, Sum, Value, is_zero, mk_prod, mk_sum
from toaster.m3.ir import MapDecl, Statement
from toaster.calculus.simplify import lifts_empty_groups
from toaster.errors import UnsupportedError


def initial_value(m: MapDecl):
    """`m[keys] := <its contents on the empty database>` when they are not empty, else None."""
    body = m.definition.expr if isinstance(m.definition, AggSum) else m.definition
    if is_zero(body) or not _may_be_nonzero_on_empty(body):
        return None
    try:
        contents = evaluate(m.definition, Database(), {}, tuple(m.keys))
    except RuntimeError as e:
        raise UnsupportedError(f"the initial value of {m.name} ({e})") from None
    terms = []
    for key, value in sorted(contents.items(), key=repr):
        lifts = [Lift(k, Value(Const(v, k.type))) for k, v in zip(m.keys, key)]
        terms.append(mk_prod(lifts + [Value(Const(value, m.type))]))
    if not terms:
        return None
    return Statement(m.name, tuple(m.keys), ":=", AggSum(tuple(m.keys), mk_sum(terms)))


def _may_be_nonzero_on_empty(e) -> bool:
    """False when a relation atom outside nested aggregates makes e empty on no rows."""
    match e:
        case Rel():
            return False
        case Sum(ts):
            return any(_may_be_nonzero_on_empty(t) for t in ts)
        case Prod(fs):
            # a map's keys are its outputs: nothing outside binds them
            return all(_may_be_nonzero_on_empty(f) and not lifts_empty_groups(f, fs, ()) for f in fs)
        case AggSum(_, q):
            return _may_be_nonzero_on_empty(q)
    return True
