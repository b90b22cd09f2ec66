"""The functions of ordered aggregate indexes (pass `m3_range_index`): their one semantics, in Python
(declared in toaster/functions.py; native code in toaster/backends/llvm/range_index.py).

An index of a map M[g.., y] is a sparse dyadic segment tree stored in an ordinary map

    IDX[g.., l, n] = sum of M[g.., y] over the keys y with node(key(y), l) = n,   l = 0..63

where key(y) is an order-preserving int64 of y (`rix_key`) and node(k, l) is the top 64-l bits of
k's unsigned image (k xor 2^63), as an int64 (`rix_node`). IDX is maintained by one M3 statement
per update of M (a loop over the 64 levels). The functions below read IDX; they take the index's
name as their first argument (a string constant) and are evaluated with the engine's maps
(`reads_maps`: toaster.functions.call passes them). Each is O(64) lookups:

  rix_interval(IDX, lo, hi, g..)      sum of M[g.., y] over lo <= key(y) <= hi (0 when lo > hi)
  rix_sum(IDX, rel, x, g..)           sum of M[g.., y] over key(y) REL x   (rel 0..3: > >= < <=)
  rix_cut(rel, a)                     the least (rel > >=) or greatest (< <=) key x with x REL a: O(1)
  rix_span(code, a, d)                an end of the floats x with f(x) REL a, f(x) = x + d, x - d or d - x
                                      (a bisection over the keys from the guess f^-1(a)): delta loops
  rix_bound(IDX, code, a, g..)        the boundary of the set {x : S(x) CMP a}, S(x) = rix_sum(rel, x):
                                      a descent from the root (requires M >= 0, so that S is monotone)

rix_bound's code = rel + 4 * strict + 8 * (shift + 1): strict: CMP is '<' (else '<='); for rel
'>' / '>=' (S falls as x grows) the set is an up-set and the result is its least x + shift, for
'<' / '<=' a down-set and the result its greatest x + shift. Results saturate at the int64 range;
an empty set gives +inf (up-sets) or -inf (down-sets) before the shift, saturated likewise.
"""
from __future__ import annotations

import struct

LEVELS = 64
I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
_SIGN = 2 ** 63
_MASK = 2 ** 64 - 1
REL_CODES = {">": 0, ">=": 1, "<": 2, "<=": 3}


def rix_key(x) -> int:
    """An int64 that orders like x: ints as they are, floats by their IEEE bits (-0.0 as 0.0)."""
    if isinstance(x, float):
        bits = struct.unpack("<q", struct.pack("<d", x + 0.0))[0]
        return bits ^ I64_MAX if bits < 0 else bits
    return int(x)


def _signed(u: int) -> int:
    u &= _MASK
    return u - 2 ** 64 if u >= _SIGN else u


def rix_node(k: int, level: int) -> int:
    return _signed(((k + _SIGN) & _MASK) >> level)


def _get(idx: dict, g: tuple, level: int, unode: int):
    return idx.get(g + (level, _signed(unode)), 0)


def rix_interval(maps, name, lo, hi, *g):
    if lo > hi:
        return 0
    idx, g = maps[name], tuple(g)
    ul, uh = lo + _SIGN, hi + _SIGN
    if ul == uh:
        return _get(idx, g, 0, ul)
    split = (ul ^ uh).bit_length() - 1
    total = _get(idx, g, 0, ul) + _get(idx, g, 0, uh)
    for level in range(split):
        if not (ul >> level) & 1:
            total += _get(idx, g, level, (ul >> level) | 1)
        if (uh >> level) & 1:
            total += _get(idx, g, level, (uh >> level) & ~1)
    return total


def rix_sum(maps, name, rel, x, *g):
    match rel:
        case 0:
            return rix_interval(maps, name, x + 1, I64_MAX, *g) if x < I64_MAX else 0
        case 1:
            return rix_interval(maps, name, x, I64_MAX, *g)
        case 2:
            return rix_interval(maps, name, I64_MIN, x - 1, *g) if x > I64_MIN else 0
    return rix_interval(maps, name, I64_MIN, x, *g)


def _holds(s, a, strict: bool) -> bool:
    return s < a if strict else s <= a


def rix_bound(maps, name, code, a, *g):
    rel, strict, shift = code & 3, bool(code & 4), (code >> 3) - 1
    idx, g = maps[name], tuple(g)
    total = _get(idx, g, LEVELS - 1, 0) + _get(idx, g, LEVELS - 1, 1)
    if rel <= 1:        # S(x) = sum over y > x (or >= x): falls as x grows; least x of the up-set
        if rel == 1 and _holds(total, a, strict):
            x = I64_MIN
        else:
            node, acc = 0, 0
            for level in range(LEVELS - 1, -1, -1):
                right = _get(idx, g, level, 2 * node + 1)
                if _holds(acc + right, a, strict):
                    node, acc = 2 * node, acc + right
                else:
                    node = 2 * node + 1
            x = node - _SIGN if _holds(acc, a, strict) else None
            if x is not None and rel == 1:
                x += 1
        x = I64_MAX + 1 if x is None else x
    else:               # S(x) = sum over y < x (or <= x): grows with x; greatest x of the down-set
        if rel == 3 and _holds(total, a, strict):
            x = I64_MAX
        else:
            node, acc = 0, 0
            for level in range(LEVELS - 1, -1, -1):
                left = _get(idx, g, level, 2 * node)
                if _holds(acc + left, a, strict):
                    node, acc = 2 * node + 1, acc + left
                else:
                    node = 2 * node
            x = node - _SIGN if _holds(acc, a, strict) else None
            if x is not None and rel == 3:
                x -= 1
        x = I64_MIN - 1 if x is None else x
    return max(I64_MIN, min(I64_MAX, x + shift))


def rix_cut(rel, a) -> int:
    """The end of the keys x with x REL a (rel 0..3: > >= < <=): the least one for > and >=, the
    greatest for < and <= (saturated at the int64 range); a NaN threshold holds for no key."""
    if isinstance(a, float) and a != a:
        return I64_MAX if rel <= 1 else I64_MIN
    k = rix_key(a)
    return (min(k + 1, I64_MAX), k, max(k - 1, I64_MIN), k)[rel]


_FORMS = (lambda x, d: x + d, lambda x, d: x - d, lambda x, d: d - x)
_HOLDS = (lambda v, a: v > a, lambda v, a: v >= a, lambda v, a: v < a, lambda v, a: v <= a)
_GUESS = (lambda a, d: a - d, lambda a, d: a + d, lambda a, d: d - a)


def _float_of_key(k: int) -> float:
    return struct.unpack("<d", struct.pack("<q", k ^ I64_MAX if k < 0 else k))[0]


KEY_NEG_INF, KEY_POS_INF = rix_key(float("-inf")), rix_key(float("inf"))


def span_code(rel: str, form: int, end: int) -> int:
    """rix_span's code: rel 0..3 (> >= < <=), form 0..2 (x + d, x - d, d - x), end 0 (lo) / 1 (hi)."""
    return REL_CODES[rel] + 4 * form + 16 * end


def rix_span(code, a, d) -> int:
    """An end (lo / hi key) of the set {x float : f(x) REL a}, f(x) = fl(x + d), fl(x - d) or fl(d - x)
    as IEEE computes it (no rounding argument: the set is searched). With d finite f is monotone over
    every float, so the set is a prefix or a suffix of [-inf, +inf], found by bisection over the keys
    (bracketed around the guess f^-1(a) first: a few steps); with d infinite or NaN f is constant
    over the finite floats and the ends are checked apart. An empty set gives lo > hi."""
    rel, form, end = code & 3, (code >> 2) & 3, code >> 4
    f, holds = _FORMS[form], _HOLDS[rel]

    def p(k):
        return holds(f(_float_of_key(k), d), a)
    if d != d or d in (float("inf"), float("-inf")):
        inside = holds(f(0.0, d), a)     # every finite x: the same value
        lo_in, hi_in = p(KEY_NEG_INF), p(KEY_POS_INF)
        lo = KEY_NEG_INF if lo_in else KEY_NEG_INF + 1 if inside else KEY_POS_INF if hi_in else I64_MAX
        hi = KEY_POS_INF if hi_in else KEY_POS_INF - 1 if inside else KEY_NEG_INF if lo_in else I64_MIN
        return (lo, hi)[end]
    up = (rel <= 1) == (form < 2)       # f rising and REL > / >=, or falling and < / <=: a suffix

    def r(k):                           # true on a prefix of [lo - 1, hi + 1] (sentinels)
        if k < KEY_NEG_INF:
            return True
        if k > KEY_POS_INF:
            return False
        return p(k) != up
    g = _GUESS[form](a, d)
    g = KEY_NEG_INF if g != g else rix_key(g)
    lo_t, hi_f = max(g - 16, KEY_NEG_INF - 1), min(g + 16, KEY_POS_INF + 1)
    if not (r(lo_t) and not r(hi_f)):
        lo_t, hi_f = KEY_NEG_INF - 1, KEY_POS_INF + 1
    while hi_f - lo_t > 1:
        mid = (lo_t + hi_f) // 2
        lo_t, hi_f = (mid, hi_f) if r(mid) else (lo_t, mid)
    if up:                              # r = not p: the suffix starts after the last key of r
        return (hi_f, KEY_POS_INF)[end] if hi_f <= KEY_POS_INF else (I64_MAX, I64_MIN)[end]
    return (KEY_NEG_INF, lo_t)[end] if lo_t >= KEY_NEG_INF else (I64_MAX, I64_MIN)[end]


def bound_code(rel: str, strict: bool, shift: int) -> int:
    return REL_CODES[rel] + 4 * strict + 8 * (shift + 1)


__all__ = ["rix_key", "rix_node", "rix_interval", "rix_sum", "rix_bound", "rix_cut", "rix_span", "span_code", "bound_code", "LEVELS"]
