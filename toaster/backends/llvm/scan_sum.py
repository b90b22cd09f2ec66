"""Which full-scan loops the LLVM backend emits without a branch (trigger_gen.scan_sum).

A tuple-mode re-evaluation such as PSP's `SUM(price)` over the volumes above a fraction of the
book's total is a scan whose body only adds a term into a float local:

    foreach ([float k] -> float v in M) { if (k > 0.0001 * total) { float t = v * 1.0; acc = acc + t; } }

Emitted as written, each entry is a branch on its liveness, one on the test, and an add that
waits for the previous one (~4 cycles per entry). When the test and the term are pure (no
map read, no call, no checked integer arithmetic, no string comparison: nothing that can fail
or write) they can be computed for every entry, dead ones included, and the add of a failing
entry replaced by adding -0.0, which changes no double (-0.0 + -0.0 = -0.0, x + -0.0 = x,
NaN stays NaN); with the add marked `reassoc` LLVM's vectorizer splits the sum into partial
sums. The result is the same sum of the same terms, added in another order (as batch mode
and imp_accumulate_loops add them).
"""
from __future__ import annotations

from toaster.imperative.ir import Assign, BinOp, Cast, Declare, ForEach, If, Lit, LocalRef, Not
from toaster.types import BOOL, DATE, FLOAT, INT, Type

_SAFE_LITERALS = (FLOAT, INT, BOOL, DATE)
_COMPARE = ("=", "!=", "<", "<=", ">", ">=")
SUM_TYPES = (FLOAT, INT)


def _pure(e, acc: str, zero=frozenset()) -> bool:
    """e cannot fail or write (safe to evaluate for any entry) and does not read the sum `acc`.
    zero: locals that are 0 for the entries an INT sum skips (its value, zeroed there): checked
    integer arithmetic that is then 0 too (`-1 * v`) cannot overflow on a skipped entry."""
    if zero and _zero_at_skipped(e, zero):
        return not _locals_read(e) & {acc}
    match e:
        case LocalRef(name, _):
            return name != acc
        case Lit(_, t):
            return t in _SAFE_LITERALS
        case BinOp(op, l, r, t) if op in ("+", "-", "*", "/"):
            # float arithmetic only: integer + - * are checked for overflow (a side effect)
            return (op == "/" or FLOAT in (t, l.type, r.type)) and _pure(l, acc) and _pure(r, acc)
        case BinOp(op, l, r, _) if op in _COMPARE:
            return l.type in _SAFE_LITERALS and r.type in _SAFE_LITERALS and _pure(l, acc) and _pure(r, acc)
        case BinOp(op, l, r, _) if op in ("and", "or"):
            return _pure(l, acc) and _pure(r, acc)
        case Not(a, _):
            return _pure(a, acc)
        case Cast(Type.FLOAT, a):
            return a.type in (FLOAT, INT) and _pure(a, acc)
    return False


def _zero_at_skipped(e, zero) -> bool:
    match e:
        case LocalRef(name, _):
            return name in zero
        case BinOp("*", Lit(_, t), other, _) | BinOp("*", other, Lit(_, t), _) if t in (INT, FLOAT):
            return _zero_at_skipped(other, zero)
        case BinOp("+" | "-", l, r, _):
            return _zero_at_skipped(l, zero) and _zero_at_skipped(r, zero)
    return False


def _locals_read(e) -> set:
    match e:
        case LocalRef(name, _):
            return {name}
        case BinOp(_, l, r, _):
            return _locals_read(l) | _locals_read(r)
    return set()


def branch_free_sum(loop: ForEach):
    """(cond, declares, acc, term) when the loop's body is `if (cond) { declares; acc = acc +
    term; }` with cond, the declares and term pure, acc a FLOAT local of the enclosing code
    that nothing else in the body reads; else None."""
    if len(loop.body) != 1 or not isinstance(loop.body[0], If) or loop.body[0].orelse:
        return None
    cond, then = loop.body[0].cond, loop.body[0].then
    if not then or not isinstance(then[-1], Assign):
        return None
    acc = then[-1].var
    match then[-1].value:
        case BinOp("+", LocalRef(name, _), term, t) if name == acc.name and t == acc.type and t in SUM_TYPES:
            pass
        case _:
            return None
    bound = {loop.value_var.name} | {k.name for k in loop.key_vars if k is not None}
    decls = then[:-1]
    if acc.name in bound or not _pure(cond, acc.name):
        return None
    zero = {loop.value_var.name} if acc.type == INT else set()
    for d in decls:
        if not isinstance(d, Declare) or d.var.name == acc.name or not _pure(d.init, acc.name, zero):
            return None
        if zero and _zero_at_skipped(d.init, zero):
            zero.add(d.var.name)
    if not _pure(term, acc.name, zero):
        return None
    return cond, decls, acc, term
