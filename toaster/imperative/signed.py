"""Signed triggers: one function for a relation's insert and delete triggers when the delete
trigger is exactly the insert trigger with every update negated.

Tuple mode runs a trigger per event and picks it by the event's sign; on an order book whose
inserts and deletes alternate unpredictably (finance: ~40 % deletes, the sign changing every
other event) that branch is mispredicted about every other event. When the delete trigger is the
insert trigger statement by statement -- each `m[k] += v` of a view map either the same or with
its value negated, every other statement (locals, loops, clears, temp maps) the same up to the
names of its locals and temp maps -- one function `signed(s, ...)` does both: the negated
updates become `m[k] += s * v`, with s = +1 or -1 from the sign, no branch. For s = -1 it runs
the delete trigger's statements in order on the same state (PSP: the two book updates are
negated, its re-evaluation loops the same).

"Negation" is checked on the expression trees, exactly (no algebra that could change a
rounding or an overflow): FLOAT values may carry the sign anywhere IEEE negation is exact
(`-(a + b) = (-a) + (-b)`, `-(a * b) = (-a) * b`, `-(a / b) = (-a) / b`, a cast of a negated
INT, `-1.0 * x` against `x`); INT values only as `-1 * v` against `v` or as literals `-c` against
`c`, so `s * v` overflows exactly where the delete trigger's value does. Anything else keeps
the two functions (a self-join's delta has a term of the same sign for both).
"""
from __future__ import annotations

from toaster.imperative.ir import BinOp, Cast, Declare, ForEach, ImpTrigger, Lit, LocalRef, MapAdd
from toaster.types import FLOAT, INT

SIGN_INT = LocalRef("__sign_int", INT)
SIGN_FLOAT = LocalRef("__sign_float", FLOAT)


def _is_minus_one(e) -> bool:
    return isinstance(e, Lit) and e.type in (INT, FLOAT) and not isinstance(e.value, bool) \
        and e.value == -1


def _negated_int(d, i) -> bool:
    if isinstance(d, Lit) and isinstance(i, Lit):
        return d.type == i.type == INT and not isinstance(d.value, bool) and d.value == -i.value
    return isinstance(d, BinOp) and d.op == "*" and _is_minus_one(d.left) and d.left.type == INT \
        and d.right == i


def _negated_float(d, i) -> bool:
    """Whether d evaluates to exactly -i (IEEE), by the shapes the delta rules give."""
    if isinstance(d, BinOp) and d.op == "*" and _is_minus_one(d.left) and d.right == i:
        return True
    if isinstance(i, BinOp) and i.op == "*" and _is_minus_one(i.left) and i.left.type == FLOAT \
            and i.right == d:
        return True
    if isinstance(d, Lit) and isinstance(i, Lit):
        return d.type == i.type == FLOAT and d.value == -i.value
    if isinstance(d, Cast) and isinstance(i, Cast):
        return d.type == i.type == FLOAT and (_negated_float(d.arg, i.arg) or _negated_int(d.arg, i.arg))
    if not (isinstance(d, BinOp) and isinstance(i, BinOp) and d.op == i.op and d.type == i.type == FLOAT):
        return False
    if d.op in ("+", "-"):
        return _negated_float(d.left, i.left) and _negated_float(d.right, i.right)
    if d.op == "*":
        return (_negated_float(d.left, i.left) and d.right == i.right) or \
            (d.left == i.left and _negated_float(d.right, i.right))
    if d.op == "/":
        return _negated_float(d.left, i.left) and d.right == i.right
    return False


def negated_value(d, i) -> bool:
    t = getattr(i, "type", None)
    if t != getattr(d, "type", None):
        return False
    return _negated_int(d, i) if t == INT else _negated_float(d, i) if t == FLOAT else False


class _Pairing:
    """Names of the delete trigger paired with the insert trigger's: locals bound by Declare and
    ForEach, and temp maps (each trigger has its own scratch maps of the same shapes). A pairing
    is one to one: rebinding a name drops the pairs it was in."""

    def __init__(self, prog):
        self.temp = {m.name: m for m in prog.maps if m.kind == "temp"}
        self.locals, self.maps = {}, {}

    def bind(self, d: LocalRef, i: LocalRef) -> bool:
        if d.type != i.type:
            return False
        for k in [k for k, v in self.locals.items() if v == i.name]:
            del self.locals[k]
        self.locals[d.name] = i.name
        return True

    def local(self, d: LocalRef, i: LocalRef) -> bool:
        return d.type == i.type and self.locals.get(d.name, None if d.name in self.locals.values() else d.name) == i.name

    def map(self, d: str, i: str) -> bool:
        if d not in self.temp or i not in self.temp:
            return d == i and d not in self.temp
        if d in self.maps or i in self.maps.values():
            return self.maps.get(d) == i
        a, b = self.temp[d], self.temp[i]
        if (a.key_types, a.value_type, a.indexes) != (b.key_types, b.value_type, b.indexes):
            return False
        self.maps[d] = i
        return True


def _same(d, i, p: _Pairing) -> bool:
    """d (delete trigger) is i (insert trigger) up to the pairing of bound names."""
    if type(d) is not type(i):
        return False
    if isinstance(d, LocalRef):
        return p.local(d, i)
    if isinstance(d, (tuple, list)):
        return len(d) == len(i) and all(_same(x, y, p) for x, y in zip(d, i))
    if isinstance(d, Declare):
        return _same(d.init, i.init, p) and p.bind(d.var, i.var)
    if isinstance(d, ForEach):
        if not (p.map(d.map, i.map) and _same(d.pattern, i.pattern, p)):
            return False
        for x, y in zip(d.key_vars + (d.value_var,), i.key_vars + (i.value_var,)):
            if (x is None) != (y is None) or (x is not None and not p.bind(x, y)):
                return False
        return len(d.key_vars) == len(i.key_vars) and _same(d.body, i.body, p)
    if hasattr(d, "__dataclass_fields__"):
        for f in d.__dataclass_fields__:
            x, y = getattr(d, f), getattr(i, f)
            if f == "map":
                if not p.map(x, y):
                    return False
            elif not _same(x, y, p):
                return False
        return True
    return d == i


def signed_trigger(insert: ImpTrigger, delete: ImpTrigger, prog) -> ImpTrigger | None:
    """The insert trigger with each update the delete trigger negates multiplied by a sign
    parameter (SIGN_INT, SIGN_FLOAT, before the tuple's fields), when every other statement of
    `delete` is the insert's (up to the names of its locals and temp maps); else None. Statement
    by statement the result does what the delete trigger does for sign -1: the same reads of
    the same state, the negated updates."""
    if insert.params != delete.params or len(insert.body) != len(delete.body) \
            or {SIGN_INT.name, SIGN_FLOAT.name} & {p.name for p in insert.params}:
        return None
    pairing, body, negated = _Pairing(prog), [], 0
    for si, sd in zip(insert.body, delete.body):
        if isinstance(si, MapAdd) and isinstance(sd, MapAdd) and si.map == sd.map \
                and si.map not in pairing.temp and _same(sd.keys, si.keys, pairing) \
                and negated_value(_renamed(sd.value, pairing), si.value):
            sign = SIGN_INT if si.value.type == INT else SIGN_FLOAT
            body.append(MapAdd(si.map, si.keys, BinOp("*", sign, si.value, si.value.type)))
            negated += 1
        elif _same(sd, si, pairing):
            body.append(si)
        else:
            return None
    if not negated:
        return None
    return ImpTrigger(f"{insert.name}_signed", insert.event, (SIGN_INT, SIGN_FLOAT) + tuple(insert.params),
                      tuple(body))


def _renamed(e, p: _Pairing):
    """Expression e of the delete trigger with its locals (and temp maps) in the insert trigger's names."""
    if isinstance(e, LocalRef):
        return LocalRef(p.locals.get(e.name, e.name), e.type)
    if isinstance(e, tuple):
        return tuple(_renamed(x, p) for x in e)
    if hasattr(e, "__dataclass_fields__"):
        kw = {f: _renamed(getattr(e, f), p) for f in e.__dataclass_fields__}
        if "map" in kw and kw["map"] in p.maps:
            kw["map"] = p.maps[kw["map"]]
        return type(e)(**kw)
    return e
