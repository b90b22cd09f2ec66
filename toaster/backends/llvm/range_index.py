"""Native code of the ordered-index functions (toaster/ordered_index.py, pass m3_range_index).

The pure ones (rix_key, rix_node) are a few instructions inline. The ones that read an index map
(rix_interval, rix_sum, rix_bound) call a function emitted ONCE per module and index map
(`rix.interval.<IDX>`, `rix.bound.<IDX>`): a loop of at most 64 steps over the map's native
`get`, so a use site costs one call, whatever the number of levels (the unrolled form made
programs megabytes long). Group keys are passed encoded, as the hash map stores them. Natively an
index keeps only the levels leaf..top (range_mask.py); the reads start at its leaf level.
"""
from __future__ import annotations

import re

from llvmlite import ir

from toaster.backends.llvm.hashmap import F64, I64, i64
from toaster.backends.llvm.range_mask import cached as _cached, ctlz as _ctlz, function as _function, \
    leaf_key, leaf_level, region as _region, root as _root, root_total as _root_total, state as _state, \
    vadd as _add
from toaster.backends.llvm.range_memo import build_bound_memo, build_interval_memo
from toaster.backends.llvm.range_mask import emit_index_rebuild, install_masks, masked_update  # noqa: F401 (codegen, trigger_gen)
from toaster.types import DATE, FLOAT, INT

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
_SIGN = i64(I64_MIN)


def _key(tg, args):
    (a,) = args
    if a.type == FLOAT:
        return _float_key(tg.b, tg.typed(a, FLOAT)), INT
    if a.type in (INT, DATE):
        return tg.typed(a, INT), INT
    return None


def _float_key(b, x):
    bits = b.bitcast(b.fadd(x, ir.Constant(F64, 0.0)), I64)        # -0.0 + 0.0 is 0.0
    return b.select(b.icmp_signed("<", bits, i64(0)), b.xor(bits, i64(I64_MAX)), bits)


def _cut(tg, args):
    """rix_cut(rel, a): a's key +1 / -1 for a strict relation (saturated); NaN: no key."""
    rel, a = args[0].value, args[1]
    b = tg.b
    if a.type not in (FLOAT, INT, DATE):
        return None
    x = tg.typed(a, FLOAT if a.type == FLOAT else INT)
    k = _float_key(b, x) if a.type == FLOAT else x
    lo_c, hi_c = i64(I64_MIN), i64(I64_MAX)
    if rel == 0:
        k = b.select(b.icmp_signed("==", k, hi_c), hi_c, b.add(k, i64(1)))
    elif rel == 2:
        k = b.select(b.icmp_signed("==", k, lo_c), lo_c, b.sub(k, i64(1)))
    if a.type == FLOAT:
        k = b.select(b.fcmp_unordered("uno", x, x), hi_c if rel <= 1 else lo_c, k)
    return k, INT


def _float_of_key(b, k):
    return b.bitcast(b.select(b.icmp_signed("<", k, i64(0)), b.xor(k, i64(I64_MAX)), k), F64)


def _build_span(module):
    """rix.span(code, a, d): python rix_span, natively (a bisection over the keys, bracketed
    around the guess f^-1(a) first)."""
    from toaster.ordered_index import KEY_NEG_INF, KEY_POS_INF
    f = ir.Function(module, ir.FunctionType(I64, [I64, F64, F64]), "rix.span")
    f.linkage = "internal"
    code, a, d = f.args
    names = ("entry", "odd", "finite", "wide", "loop", "body", "done")
    blocks = {n: f.append_basic_block(n) for n in names}
    b = ir.IRBuilder(blocks["entry"])
    rel, form, end = b.and_(code, i64(3)), b.and_(b.lshr(code, i64(2)), i64(3)), b.lshr(code, i64(4))
    kni, kpi = i64(KEY_NEG_INF), i64(KEY_POS_INF)
    lo_empty, hi_empty = i64(I64_MAX), i64(I64_MIN)

    def holds(bb, x):
        fx = bb.select(bb.icmp_unsigned("==", form, i64(0)), bb.fadd(x, d),
                       bb.select(bb.icmp_unsigned("==", form, i64(1)), bb.fsub(x, d), bb.fsub(d, x)))
        out = bb.fcmp_ordered("<=", fx, a)
        for r, op in ((0, ">"), (1, ">="), (2, "<")):
            out = bb.select(bb.icmp_unsigned("==", rel, i64(r)), bb.fcmp_ordered(op, fx, a), out)
        return out

    def pick(bb, lo, hi):
        return bb.select(bb.icmp_unsigned("==", end, i64(0)), lo, hi)
    inf = ir.Constant(F64, float("inf"))
    b.cbranch(b.fcmp_unordered("uno", b.fsub(d, d), b.fsub(d, d)), blocks["odd"], blocks["finite"])
    # d infinite or NaN: f is one value over the finite floats; the infinities are checked apart
    b = ir.IRBuilder(blocks["odd"])
    inside = holds(b, ir.Constant(F64, 0.0))
    lo_in, hi_in = holds(b, b.fneg(inf)), holds(b, inf)
    lo = b.select(lo_in, kni, b.select(inside, i64(KEY_NEG_INF + 1), b.select(hi_in, kpi, lo_empty)))
    hi = b.select(hi_in, kpi, b.select(inside, i64(KEY_POS_INF - 1), b.select(lo_in, kni, hi_empty)))
    b.ret(pick(b, lo, hi))
    b = ir.IRBuilder(blocks["finite"])
    up = b.icmp_unsigned("==", b.icmp_unsigned("<=", rel, i64(1)), b.icmp_unsigned("<", form, i64(2)))

    def r(bb, k):                       # true on a prefix of the keys (sentinels beyond the infinities)
        inner = bb.xor(holds(bb, _float_of_key(bb, k)), up)
        return bb.select(bb.icmp_signed("<", k, kni), ir.Constant(ir.IntType(1), 1),
                         bb.select(bb.icmp_signed(">", k, kpi), ir.Constant(ir.IntType(1), 0), inner))
    guess = b.select(b.icmp_unsigned("==", form, i64(0)), b.fsub(a, d),
                     b.select(b.icmp_unsigned("==", form, i64(1)), b.fadd(a, d), b.fsub(d, a)))
    g = _float_key(b, guess)
    g = b.select(b.fcmp_unordered("uno", guess, guess), kni, g)
    g = b.select(b.icmp_signed("<", g, kni), kni, b.select(b.icmp_signed(">", g, kpi), kpi, g))
    lo0, hi0 = b.sub(g, i64(16)), b.add(g, i64(16))
    lo0 = b.select(b.icmp_signed("<", lo0, i64(KEY_NEG_INF - 1)), i64(KEY_NEG_INF - 1), lo0)
    hi0 = b.select(b.icmp_signed(">", hi0, i64(KEY_POS_INF + 1)), i64(KEY_POS_INF + 1), hi0)
    near = b.and_(r(b, lo0), b.not_(r(b, hi0)))
    b.branch(blocks["wide"])
    b = ir.IRBuilder(blocks["wide"])
    start_lo = b.select(near, lo0, i64(KEY_NEG_INF - 1))
    start_hi = b.select(near, hi0, i64(KEY_POS_INF + 1))
    b.branch(blocks["loop"])
    b = ir.IRBuilder(blocks["loop"])
    lo_t, hi_f = b.phi(I64), b.phi(I64)
    b.cbranch(b.icmp_unsigned(">", b.sub(hi_f, lo_t), i64(1)), blocks["body"], blocks["done"])
    b = ir.IRBuilder(blocks["body"])
    mid = b.add(lo_t, b.lshr(b.sub(hi_f, lo_t), i64(1)))
    take = r(b, mid)
    lo_t.add_incoming(start_lo, blocks["wide"])
    lo_t.add_incoming(b.select(take, mid, lo_t), blocks["body"])
    hi_f.add_incoming(start_hi, blocks["wide"])
    hi_f.add_incoming(b.select(take, hi_f, mid), blocks["body"])
    b.branch(blocks["loop"])
    b = ir.IRBuilder(blocks["done"])
    suffix_lo = b.select(b.icmp_signed("<=", hi_f, kpi), hi_f, lo_empty)
    suffix_hi = b.select(b.icmp_signed("<=", hi_f, kpi), kpi, hi_empty)
    prefix_lo = b.select(b.icmp_signed(">=", lo_t, kni), kni, lo_empty)
    prefix_hi = b.select(b.icmp_signed(">=", lo_t, kni), lo_t, hi_empty)
    b.ret(pick(b, b.select(up, suffix_lo, prefix_lo), b.select(up, suffix_hi, prefix_hi)))
    return f


def _span(tg, args):
    """rix_span(code, a, d): one call of the module's rix.span."""
    fns = tg.g.__dict__.setdefault("rix_functions", {})
    if ("span", "") not in fns:
        fns[("span", "")] = _build_span(tg.g.module)
    code, a, d = args
    return tg.b.call(fns[("span", "")], [tg.typed(code, INT), tg.typed(a, FLOAT), tg.typed(d, FLOAT)]), INT


def _node(tg, args):
    k, level = (tg.typed(a, INT) for a in args)
    return tg.b.lshr(tg.b.xor(k, _SIGN), level), INT


def _index(tg, args):
    """(NativeMap, encoded group keys) of a call whose first argument names the index."""
    from toaster.backends.llvm.trigger_gen import encode_key
    m = tg.g.map(args[0].value)
    groups = args[3:] if len(args) > 3 else ()
    types = m.spec.key_types[:len(groups)]
    return m, [encode_key(tg.b, tg.typed(g, t), t) for g, t in zip(groups, types)]


def _umax(b, x, y):
    return b.select(b.icmp_unsigned(">", x, y), x, y)


def _umin(b, x, y):
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _side_start(m, gs, blocks, side, split, leaf, end, end_node, inside):
    """One side's first value, a phi at block `<side>start`: the whole child of the split node
    that holds `end` (block `<side>whole`), or `end`'s leaf node if its one key is `inside` `end`
    (block `<side>leaf`)."""
    b = ir.IRBuilder(blocks[side + "whole"])
    v_whole = b.call(m.get_fn, gs + [split, b.lshr(end, split)])
    b.branch(blocks[side + "start"])
    b = ir.IRBuilder(blocks[side + "leaf"])
    v_leaf = b.call(m.get_fn, gs + [leaf, end_node])
    v_leaf = b.select(b.icmp_unsigned(inside, leaf_key(b, m, gs, leaf, end_node), end), v_leaf, m.zero())
    b.branch(blocks[side + "start"])
    b = ir.IRBuilder(blocks[side + "start"])
    phi = b.phi(m.vty)
    phi.add_incoming(v_whole, blocks[side + "whole"])
    phi.add_incoming(v_leaf, blocks[side + "leaf"])
    return phi


def _build_interval(m):
    """rix.interval.M(lo, hi, groups..): the sum over lo <= key <= hi (python: rix_interval).
    A side whose end is the start (lo) / end (hi) of its child of the split node is that child's
    one node: a prefix or suffix (the delta loops' intervals, clamped to the used region) costs
    one path, not two."""
    groups = m.K - 2
    f = _function(m, "interval", m.vty, [I64, I64] + [I64] * groups)
    lo, hi, gs = f.args[0], f.args[1], list(f.args[2:])
    blocks = {n: f.append_basic_block(n) for n in ("entry", "empty", "one", "inside", "single", "two",
                                                    "lwhole", "lleaf", "lstart", "rwhole", "rleaf", "rstart",
                                                    "loop", "body", "left", "right_test", "right", "next",
                                                    "done")}
    b = ir.IRBuilder(blocks["entry"])
    b.cbranch(b.icmp_signed(">", lo, hi), blocks["empty"], blocks["one"])
    ir.IRBuilder(blocks["empty"]).ret(m.zero())
    b = ir.IRBuilder(blocks["one"])
    rlo, rhi = _region(b, m)           # every key lies there: clamping keeps the sum
    ul, uh = _umax(b, b.xor(lo, _SIGN), rlo), _umin(b, b.xor(hi, _SIGN), rhi)
    b.cbranch(b.icmp_unsigned(">", ul, uh), blocks["empty"], blocks["inside"])
    b = ir.IRBuilder(blocks["inside"])
    # the nodes of ul and uh at the leaf level hold one key each: theirs count if inside
    leaf = leaf_level(b, m)
    lo_node, hi_node = b.lshr(ul, leaf), b.lshr(uh, leaf)
    b.cbranch(b.icmp_unsigned("==", lo_node, hi_node), blocks["single"], blocks["two"])
    b = ir.IRBuilder(blocks["single"])
    v_lo = b.call(m.get_fn, gs + [leaf, lo_node])
    k_lo = leaf_key(b, m, gs, leaf, lo_node)
    b.ret(b.select(b.and_(b.icmp_unsigned(">=", k_lo, ul), b.icmp_unsigned("<=", k_lo, uh)), v_lo, m.zero()))
    b = ir.IRBuilder(blocks["two"])
    split = b.sub(i64(63), _ctlz(b, m, b.xor(ul, uh)))
    low_bits = b.sub(b.shl(i64(1), split), i64(1))
    lwhole = b.icmp_unsigned("==", b.and_(ul, low_bits), i64(0))
    rwhole = b.icmp_unsigned("==", b.and_(uh, low_bits), low_bits)
    b.cbranch(lwhole, blocks["lwhole"], blocks["lleaf"])
    left0 = _side_start(m, gs, blocks, "l", split, leaf, ul, lo_node, ">=")
    b = ir.IRBuilder(blocks["lstart"])
    b.cbranch(rwhole, blocks["rwhole"], blocks["rleaf"])
    right0 = _side_start(m, gs, blocks, "r", split, leaf, uh, hi_node, "<=")
    b = ir.IRBuilder(blocks["rstart"])
    start = _add(b, m, left0, right0)
    b.branch(blocks["loop"])
    b = ir.IRBuilder(blocks["loop"])
    level = b.phi(I64)
    acc = b.phi(m.vty)
    b.cbranch(b.icmp_signed("<", level, split), blocks["body"], blocks["done"])
    b = ir.IRBuilder(blocks["body"])
    lnode, hnode = b.lshr(ul, level), b.lshr(uh, level)
    take_left = b.and_(b.icmp_unsigned("==", b.and_(lnode, i64(1)), i64(0)), b.not_(lwhole))
    b.cbranch(take_left, blocks["left"], blocks["right_test"])
    b = ir.IRBuilder(blocks["left"])
    with_left = _add(b, m, acc, b.call(m.get_fn, gs + [level, b.or_(lnode, i64(1))]))
    b.branch(blocks["right_test"])
    b = ir.IRBuilder(blocks["right_test"])
    acc2 = b.phi(m.vty)
    acc2.add_incoming(acc, blocks["body"])
    acc2.add_incoming(with_left, blocks["left"])
    take_right = b.and_(b.icmp_unsigned("==", b.and_(hnode, i64(1)), i64(1)), b.not_(rwhole))
    b.cbranch(take_right, blocks["right"], blocks["next"])
    b = ir.IRBuilder(blocks["right"])
    with_right = _add(b, m, acc2, b.call(m.get_fn, gs + [level, b.and_(hnode, i64(-2))]))
    b.branch(blocks["next"])
    b = ir.IRBuilder(blocks["next"])
    acc3 = b.phi(m.vty)
    acc3.add_incoming(acc2, blocks["right_test"])
    acc3.add_incoming(with_right, blocks["right"])
    next_level = b.add(level, i64(1))
    b.branch(blocks["loop"])
    level.add_incoming(leaf, blocks["rstart"])
    level.add_incoming(next_level, blocks["next"])
    acc.add_incoming(start, blocks["rstart"])
    acc.add_incoming(acc3, blocks["next"])
    b = ir.IRBuilder(blocks["done"])
    b.ret(acc)
    return f


def _build_bound(m):
    """rix.bound.M(code, a, groups..): python rix_bound, natively (a as a double)."""
    groups = m.K - 2
    f = _function(m, "bound", I64, [I64, F64] + [I64] * groups)
    code, a, gs = f.args[0], f.args[1], list(f.args[2:])
    entry = f.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    rel = b.and_(code, i64(3))
    strict = b.icmp_unsigned("!=", b.and_(code, i64(4)), i64(0))
    shift = b.sub(b.ashr(code, i64(3)), i64(1))
    suffix = b.icmp_unsigned("<=", rel, i64(1))

    def holds(bb, s):
        x = s if m.vty == F64 else bb.sitofp(s, F64)
        return bb.select(strict, bb.fcmp_ordered("<", x, a), bb.fcmp_ordered("<=", x, a))

    base, h = _state(b, m)
    root = _root(b, base, h)
    total = _root_total(b, m, gs, base, h, root)
    # the total holding: the set is every key (up-sets: INT64_MIN, down-sets: INT64_MAX); 0 not
    # holding: no key (sums are >= 0 where descents are used). Otherwise the full-width descent
    # follows the used region's prefix with acc = 0 down to level h: it starts there.
    wide = ir.IntType(128)
    every = holds(b, total)
    early = b.or_(every, b.not_(holds(b, m.zero())))
    early_value = b.select(every, b.select(suffix, ir.Constant(wide, I64_MIN), ir.Constant(wide, I64_MAX)),
                           b.select(suffix, ir.Constant(wide, I64_MAX + 1), ir.Constant(wide, I64_MIN - 1)))
    loop, body, leaf, finish = (f.append_basic_block(n) for n in ("loop", "body", "leaf", "finish"))
    h_minus_1 = b.sub(h, i64(1))
    low = leaf_level(b, m)
    b.cbranch(early, finish, loop)
    b = ir.IRBuilder(loop)
    level = b.phi(I64)
    node = b.phi(I64)
    acc = b.phi(m.vty)
    b.cbranch(b.icmp_signed(">=", level, low), body, leaf)
    b = ir.IRBuilder(body)
    twice = b.shl(node, i64(1))
    # suffix sums look at the right child, prefix sums at the left one
    child = b.select(suffix, b.or_(twice, i64(1)), twice)
    v = b.call(m.get_fn, gs + [level, child])
    with_v = _add(b, m, acc, v)
    take = holds(b, with_v)
    # suffix: holding -> left child with acc + v; else right.  prefix: holding -> right with acc + v; else left
    go_right = b.select(suffix, b.not_(take), take)
    next_node = b.select(go_right, b.or_(twice, i64(1)), twice)
    next_acc = b.select(take, with_v, acc)
    next_level = b.sub(level, i64(1))
    b.branch(loop)
    level.add_incoming(h_minus_1, entry)
    level.add_incoming(next_level, body)
    node.add_incoming(root, entry)
    node.add_incoming(next_node, body)
    acc.add_incoming(m.zero(), entry)
    acc.add_incoming(next_acc, body)
    b = ir.IRBuilder(leaf)
    # node is at the leaf level with acc the sum beyond it; it holds at most one key k. The full
    # descent would go on to its first (suffix) / last (prefix) position if acc + its value
    # holds, else follow k (acc holding), else end at no key.
    found = holds(b, acc)
    v = b.call(m.get_fn, gs + [low, node])
    first = b.shl(node, low)
    edge = b.select(suffix, first, b.or_(first, b.sub(b.shl(i64(1), low), i64(1))))
    x = b.xor(b.select(holds(b, _add(b, m, acc, v)), edge, leaf_key(b, m, gs, low, node)), _SIGN)
    # rel 1: x + 1, rel 3: x - 1 (in 128 bits, saturated below); none: +inf (suffix) / -inf (prefix)
    xw = b.sext(x, wide)
    adj = b.select(b.icmp_unsigned("==", rel, i64(1)), ir.Constant(wide, 1),
                   b.select(b.icmp_unsigned("==", rel, i64(3)), ir.Constant(wide, -1), ir.Constant(wide, 0)))
    none = b.select(suffix, ir.Constant(wide, I64_MAX + 1), ir.Constant(wide, I64_MIN - 1))
    res_leaf = b.select(found, b.add(xw, adj), none)
    b.branch(finish)
    b = ir.IRBuilder(finish)
    res = b.phi(wide)
    res.add_incoming(early_value, entry)
    res.add_incoming(res_leaf, leaf)
    shifted = b.add(res, b.sext(shift, wide))
    lo_c, hi_c = ir.Constant(wide, I64_MIN), ir.Constant(wide, I64_MAX)
    clamped = b.select(b.icmp_signed("<", shifted, lo_c), lo_c, b.select(b.icmp_signed(">", shifted, hi_c), hi_c, shifted))
    b.ret(b.trunc(clamped, I64))
    return f


def _interval_call(tg, args):
    m, gs = _index(tg, args)
    fn = _cached(tg, "interval", m, _build_interval)
    if getattr(m, "rix_memo", None) is not None:        # range_memo.py
        fn = _cached(tg, "imemo", m, lambda m: build_interval_memo(m, fn))
    v = tg.b.call(fn, [tg.typed(args[1], INT), tg.typed(args[2], INT)] + gs)
    return v, FLOAT if m.vty == F64 else INT


def _sum_call(tg, args):
    m, gs = _index(tg, args)
    fn = _cached(tg, "interval", m, _build_interval)
    b = tg.b
    rel, x = args[1].value, tg.typed(args[2], INT)
    lo_c, hi_c = i64(I64_MIN), i64(I64_MAX)
    match rel:
        case 0:         # y > x
            edge = b.icmp_signed("==", x, hi_c)
            lo, hi = b.select(edge, hi_c, b.add(x, i64(1))), b.select(edge, lo_c, hi_c)
        case 1:
            lo, hi = x, hi_c
        case 2:         # y < x
            edge = b.icmp_signed("==", x, lo_c)
            lo, hi = b.select(edge, hi_c, lo_c), b.select(edge, lo_c, b.sub(x, i64(1)))
        case _:
            lo, hi = lo_c, x
    return b.call(fn, [lo, hi] + gs), FLOAT if m.vty == F64 else INT


def _bound_call(tg, args):
    m, gs = _index(tg, args)
    fn = _cached(tg, "bound", m, _build_bound)
    if m.K == 2 and getattr(m, "rix_memo", None) is not None:      # range_memo.py
        fn = _cached(tg, "bmemo", m, lambda m: build_bound_memo(m, fn))
    return tg.b.call(fn, [tg.typed(args[1], INT), tg.typed(args[2], FLOAT)] + gs), INT


# ------------------------------------------------------------------ rollback without records
def rebuilt_indexes(prog) -> dict:
    """{index map: (indexed map, key position)} for the range indexes of `prog` that keep no undo
    records: 64 records per update (one per level) were most of a tuple's cost, and a rejected
    batch is rare, so toaster.rollback rebuilds them from their maps once those are restored.
    An index is named `<map>_rix[n]` by m3_range_index; one whose position is ambiguous (two
    keys of the map's type) keeps its records."""
    specs = {m.name: m for m in prog.maps}
    if "RIX_LEVELS" not in specs:
        return {}
    out = {}
    for m in prog.maps:
        found = re.fullmatch(r"(.+)_rix\d*", m.name)
        base = specs.get(found.group(1)) if found else None
        if base is None or m.kind != "view" or base.kind != "view" or m.key_types[-2:] != (INT, INT) \
                or base.value_type != m.value_type or len(base.key_types) != len(m.key_types) - 1:
            continue
        groups = tuple(m.key_types[:-2])
        at = [p for p, t in enumerate(base.key_types) if t in (FLOAT, INT, DATE)
              and tuple(base.key_types[:p]) + tuple(base.key_types[p + 1:]) == groups]
        if len(at) > 1:             # keys of one type: the position the update code indexes
            at = [p for p in at if p in _indexed_positions(prog, m.name, base.name)]
        if len(at) == 1:
            out[m.name] = (base.name, at[0])
    return out


def _indexed_positions(prog, index: str, base: str) -> set:
    """The positions of `base`'s keys that the updates of `index` read `rix_key` of, where the
    same trigger adds to `base` with that key (m3_range_index writes them side by side)."""
    from toaster.imperative.ir import Call, ForEach, If, MapAdd
    found = set()

    def adds(body):
        for s in body:
            if isinstance(s, MapAdd):
                yield s
            elif isinstance(s, If):
                yield from adds(s.then)
                yield from adds(s.orelse)
            elif isinstance(s, ForEach):
                yield from adds(s.body)
    for t in prog.triggers:
        stmts = list(adds(t.body))
        for s in stmts:
            node = s.keys[-1] if s.map == index and s.keys else None
            if isinstance(node, Call) and node.name == "rix_node" and isinstance(node.args[0], Call) \
                    and node.args[0].name == "rix_key":
                y = node.args[0].args[0]
                found |= {k.index(y) for k in (b.keys for b in stmts if b.map == base) if list(k).count(y) == 1}
    return found


RIX_BUILDERS = {"rix_key": _key, "rix_node": _node, "rix_cut": _cut, "rix_span": _span, "rix_interval": _interval_call, "rix_sum": _sum_call,
                "rix_bound": _bound_call}
