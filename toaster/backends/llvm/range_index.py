"""Native code of the ordered-index functions (toaster/ordered_index.py, pass m3_range_index).

The pure ones (rix_key, rix_node) are a few instructions inline. The ones that read an index map
(rix_interval, rix_sum, rix_bound) call a function emitted ONCE per module and index map
(`rix.interval.<IDX>`, `rix.bound.<IDX>`): a loop of at most 64 steps over the map's native
`get`, so a use site costs one call, whatever the number of levels (the unrolled form made
programs megabytes long). Group keys are passed encoded, as the hash map stores them.
"""
from __future__ import annotations

import re

from llvmlite import ir

from toaster.backends.llvm.hashmap import F64, I64, PTR, i64
from toaster.m3.range_index import LEVELS_MAP
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


def _cached(tg, kind: str, m, build):
    fns = tg.g.__dict__.setdefault("rix_functions", {})
    if (kind, m.name) not in fns:
        fns[(kind, m.name)] = build(m)
    return fns[(kind, m.name)]


def _function(m, kind: str, ret, params):
    f = ir.Function(m.module, ir.FunctionType(ret, params), f"rix.{kind}.{m.name}")
    f.linkage = "internal"
    return f


def _add(b, m, x, y):
    return b.fadd(x, y) if m.vty == F64 else b.add(x, y)


def _build_interval(m):
    """rix.interval.M(lo, hi, groups..): the sum over lo <= key <= hi (python: rix_interval)."""
    groups = m.K - 2
    f = _function(m, "interval", m.vty, [I64, I64] + [I64] * groups)
    lo, hi, gs = f.args[0], f.args[1], list(f.args[2:])
    blocks = {n: f.append_basic_block(n) for n in ("entry", "empty", "one", "two", "loop", "body",
                                                    "left", "right_test", "right", "next", "done")}
    b = ir.IRBuilder(blocks["entry"])
    b.cbranch(b.icmp_signed(">", lo, hi), blocks["empty"], blocks["one"])
    ir.IRBuilder(blocks["empty"]).ret(m.zero())
    b = ir.IRBuilder(blocks["one"])
    rlo, rhi = _region(b, m)           # every key lies there: clamping keeps the sum
    ul, uh = _umax(b, b.xor(lo, _SIGN), rlo), _umin(b, b.xor(hi, _SIGN), rhi)
    inside = f.append_basic_block("inside")
    b.cbranch(b.icmp_unsigned(">", ul, uh), blocks["empty"], inside)
    b = ir.IRBuilder(inside)
    v_lo = b.call(m.get_fn, gs + [i64(0), ul])
    same = b.icmp_unsigned("==", ul, uh)
    b.cbranch(same, blocks["done"], blocks["two"])
    b = ir.IRBuilder(blocks["two"])
    v_hi = b.call(m.get_fn, gs + [i64(0), uh])
    split = b.sub(i64(63), _ctlz(b, m, b.xor(ul, uh)))
    start = _add(b, m, v_lo, v_hi)
    b.branch(blocks["loop"])
    b = ir.IRBuilder(blocks["loop"])
    level = b.phi(I64)
    acc = b.phi(m.vty)
    b.cbranch(b.icmp_signed("<", level, split), blocks["body"], blocks["done"])
    b = ir.IRBuilder(blocks["body"])
    lnode, hnode = b.lshr(ul, level), b.lshr(uh, level)
    b.cbranch(b.icmp_unsigned("==", b.and_(lnode, i64(1)), i64(0)), blocks["left"], blocks["right_test"])
    b = ir.IRBuilder(blocks["left"])
    with_left = _add(b, m, acc, b.call(m.get_fn, gs + [level, b.or_(lnode, i64(1))]))
    b.branch(blocks["right_test"])
    b = ir.IRBuilder(blocks["right_test"])
    acc2 = b.phi(m.vty)
    acc2.add_incoming(acc, blocks["body"])
    acc2.add_incoming(with_left, blocks["left"])
    b.cbranch(b.icmp_unsigned("==", b.and_(hnode, i64(1)), i64(1)), blocks["right"], blocks["next"])
    b = ir.IRBuilder(blocks["right"])
    with_right = _add(b, m, acc2, b.call(m.get_fn, gs + [level, b.and_(hnode, i64(-2))]))
    b.branch(blocks["next"])
    b = ir.IRBuilder(blocks["next"])
    acc3 = b.phi(m.vty)
    acc3.add_incoming(acc2, blocks["right_test"])
    acc3.add_incoming(with_right, blocks["right"])
    next_level = b.add(level, i64(1))
    b.branch(blocks["loop"])
    level.add_incoming(i64(0), blocks["two"])
    level.add_incoming(next_level, blocks["next"])
    acc.add_incoming(start, blocks["two"])
    acc.add_incoming(acc3, blocks["next"])
    b = ir.IRBuilder(blocks["done"])
    out = b.phi(m.vty)
    out.add_incoming(v_lo, inside)
    out.add_incoming(acc, blocks["loop"])
    b.ret(out)
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
    b.cbranch(early, finish, loop)
    b = ir.IRBuilder(loop)
    level = b.phi(I64)
    node = b.phi(I64)
    acc = b.phi(m.vty)
    b.cbranch(b.icmp_signed(">=", level, i64(0)), body, leaf)
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
    found = holds(b, acc)
    x = b.xor(node, _SIGN)                               # the leaf's signed key
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


# ------------------------------------------------------------------ the used region (mask)
# An index whose undo is a rebuild keeps, natively, only the levels below
# its used bits: base = the unsigned key of its first key, diff = OR of (u xor base) over every
# key u it has seen (monotone: deletions never shrink it), h = bit length of diff. Every key lies
# in the region of base's top 64 - h bits, so levels above h hold one node per group (its total): they are
# not kept; levels 0..min(h, 63) are. When diff grows, the new levels get the old total
# (`rix.grow`); `rix.unmask` (called before the engine reads or loads a map's raw entries) fills
# every level, making the index full width (diff = -1) from then on. Python's index functions
# keep every level: interp and spark read the same answers from full maps.
MASK_FIELDS = ("base", "diff", "used")


def install_masks(module, maps: dict, rebuilt: dict, prog) -> None:
    """Give each masked index its globals (NativeMap.rix_mask) and export `rix.unmask`: the
    indexes rebuilt after a rollback whose every write is a level loop `masked_update` takes."""
    masked = []
    writes = _level_loop_writes(prog)
    for name, m in maps.items():
        m.rix_mask = None
        if name in rebuilt and m.K >= 2 and writes.get(name) is True:
            gs = []
            for field in MASK_FIELDS:
                g = ir.GlobalVariable(module, I64, f"rix.{field}.{name}")
                g.linkage, g.initializer = "internal", i64(0)
                gs.append(g)
            m.rix_mask = tuple(gs)
            masked.append(m)
    f = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "rix.unmask")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    for m in masked:
        base_g, diff_g, used_g = m.rix_mask
        with b.if_else(b.icmp_unsigned("==", b.load(used_g, typ=I64), i64(0))) as (fresh, seen):
            with fresh:
                b.store(i64(1), used_g)
                b.store(i64(0), base_g)
            with seen:
                diff = b.load(diff_g, typ=I64)
                _fill(f, b, m, b.load(base_g, typ=I64), _bits(b, m, diff), i64(64))
        b.store(i64(-1), diff_g)
    b.ret_void()


def _ctlz(b, m, x):
    fn = m.module.globals.get("llvm.ctlz.i64") or \
        ir.Function(m.module, ir.FunctionType(I64, [I64, ir.IntType(1)]), "llvm.ctlz.i64")
    return b.call(fn, [x, ir.Constant(ir.IntType(1), 0)])


def _bits(b, m, diff):
    """The bit length of diff (0..64)."""
    return b.sub(i64(64), _ctlz(b, m, diff))


def _state(b, m):
    """(base, h) of an index: h = 64 and base = 0 (every level) when it is not masked."""
    if getattr(m, "rix_mask", None) is None:
        return i64(0), i64(64)
    base_g, diff_g, _ = m.rix_mask
    return b.load(base_g, typ=I64), _bits(b, m, b.load(diff_g, typ=I64))


def _min63(b, x):
    return b.select(b.icmp_unsigned("<", x, i64(63)), x, i64(63))


def _root(b, base, h):
    """The node at level h holding every key (0 at the virtual level 64)."""
    return b.select(b.icmp_unsigned("==", h, i64(64)), i64(0), b.lshr(base, _min63(b, h)))


def _root_total(b, m, gs, base, h, root):
    """The sum of every key: the root's two children (level h - 1), or level 0's base when h = 0."""
    some = b.icmp_unsigned(">", h, i64(0))
    level = b.select(some, b.sub(h, i64(1)), i64(0))
    twice = b.shl(root, i64(1))
    left = b.call(m.get_fn, gs + [level, b.select(some, twice, base)])
    right = b.call(m.get_fn, gs + [level, b.or_(twice, i64(1))])
    return b.select(some, _add(b, m, left, right), left)


def _region(b, m):
    """[lo, hi] (unsigned keys) of the used region."""
    base, h = _state(b, m)
    sh = _min63(b, h)
    full = b.icmp_unsigned("==", h, i64(64))
    lo = b.select(full, i64(0), b.shl(b.lshr(base, sh), sh))
    span = b.select(full, i64(-1), b.sub(b.shl(i64(1), sh), i64(1)))
    return lo, b.or_(lo, span)


def _umax(b, x, y):
    return b.select(b.icmp_unsigned(">", x, y), x, y)


def _umin(b, x, y):
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _fill(f, b, m, base, h_old, h_new):
    """Levels h_old + 1 .. min(h_new, 63) get each group's old total (all keys so far lie in node
    base >> l there); a no-op when h_old >= 63. Grouped: a scan of the entries at level h_old
    (those present before the fill: the new ones, appended, are not visited; pointers reloaded
    per entry since adds may grow the arrays)."""
    start = b.add(h_old, i64(1))
    top = _min63(b, h_new)
    groups = m.K - 2
    with b.if_then(b.icmp_signed("<=", start, top)):
        lvl = _min63(b, h_old)
        root = b.lshr(base, lvl)
        if groups == 0:
            total = b.call(m.get_fn, [lvl, root])
            with b.if_then(m.is_nonzero(b, total)):
                _fill_levels(f, b, m, [], base, start, top, total)
            return

        def entry(bb, e):
            keys = bb.load(m.g_keys, typ=PTR)
            v = m.val_at(bb, e)
            at = bb.and_(bb.icmp_unsigned("==", m.key_at(bb, keys, e, groups), lvl),
                         bb.icmp_unsigned("==", m.key_at(bb, keys, e, groups + 1), root))
            with bb.if_then(bb.and_(at, m.is_nonzero(bb, v))):
                _fill_levels(f, bb, m, [m.key_at(bb, keys, e, j) for j in range(groups)], base, start, top, v)
            return bb
        done = m._count_loop(f, b, b.load(m.g_count, typ=I64), entry)
        b.position_at_end(done.block)


def _fill_levels(f, b, m, gs, base, start, top, total):
    head, body, done = (f.append_basic_block(n) for n in ("rix.fill", "rix.fill.add", "rix.fill.done"))
    pre = b.block
    b.branch(head)
    hb = ir.IRBuilder(head)
    level = hb.phi(I64)
    level.add_incoming(start, pre)
    hb.cbranch(hb.icmp_signed("<=", level, top), body, done)
    lb = ir.IRBuilder(body)
    m.add(lb, gs + [level, lb.lshr(base, level)], total)
    level.add_incoming(lb.add(level, i64(1)), lb.block)
    lb.branch(head)
    b.position_at_end(done)


def _build_grow(m):
    """rix.grow.M(u) -> the top level to update for key u (unsigned): records u in the mask,
    filling the levels it adds."""
    f = _function(m, "grow", I64, [I64])
    (u,) = f.args
    base_g, diff_g, used_g = m.rix_mask
    entry, first, seen = (f.append_basic_block(n) for n in ("entry", "first", "seen"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("==", b.load(used_g, typ=I64), i64(0)), first, seen)
    fb = ir.IRBuilder(first)
    fb.store(i64(1), used_g)
    fb.store(u, base_g)
    fb.ret(i64(0))
    b = ir.IRBuilder(seen)
    base, diff = b.load(base_g, typ=I64), b.load(diff_g, typ=I64)
    new = b.or_(diff, b.xor(u, base))
    with b.if_then(b.icmp_unsigned("!=", new, diff)):
        _fill(f, b, m, base, _bits(b, m, diff), _bits(b, m, new))
        b.store(new, diff_g)
    b.ret(_min63(b, _bits(b, m, b.load(diff_g, typ=I64))))
    return f


def _level_loop_writes(prog) -> dict:
    """{map: True} for maps written only by level loops of the shape masked_update takes; False
    for maps also written otherwise."""
    from toaster.imperative.ir import ForEach, If, MapAdd, MapClear, MapSet
    out: dict = {}

    def walk(stmts):
        for st in stmts:
            if isinstance(st, ForEach) and st.map == LEVELS_MAP and _level_loop(st) is not None:
                out.setdefault(st.body[0].map, True)
                continue
            if isinstance(st, (MapAdd, MapSet, MapClear)):
                out[st.map] = False
            elif isinstance(st, If):
                walk(st.then)
                walk(st.orelse)
            elif isinstance(st, ForEach):
                walk(st.body)
    for t in prog.triggers:
        walk(t.body)
    return out


def _level_loop(s):
    """The rix_node call of `foreach l in RIX_LEVELS: IDX[g.., l, rix_node(rix_key(y), l)] += v`, else None."""
    from toaster.imperative.ir import Call, MapAdd
    body = s.body
    if len(body) != 1 or not isinstance(body[0], MapAdd) or len(body[0].keys) < 2 or s.key_vars[0] is None:
        return None
    node = body[0].keys[-1]
    if not isinstance(node, Call) or node.name != "rix_node" or not isinstance(node.args[0], Call) \
            or node.args[0].name != "rix_key" or body[0].keys[-2] != s.key_vars[0]:
        return None
    return node


def masked_update(tg, s) -> bool:
    """Emit `foreach l in RIX_LEVELS: IDX[l, rix_node(k, l)] += v` for a masked IDX as a loop over
    levels 0..top (rix.grow first); False (nothing emitted) for any other loop."""
    node = _level_loop(s)
    body = s.body
    if node is None:
        return False
    m = tg.g.map(body[0].map)
    if getattr(m, "rix_mask", None) is None:
        return False
    b = tg.b
    u = b.xor(tg.typed(node.args[0], INT), _SIGN)
    top = b.call(_cached(tg, "grow", m, _build_grow), [u])
    head, loop_body, done = (tg.fn.append_basic_block(n) for n in ("rix.level", "rix.update", "rix.next"))
    slot = tg._counter("rix.l", i64(0))
    b.branch(head)
    b.position_at_end(head)
    level = b.load(slot, typ=I64)
    b.cbranch(b.icmp_signed("<=", level, top), loop_body, done)
    b.position_at_end(loop_body)
    tg.scopes.append({})
    tg.bind(s.key_vars[0], level, INT)
    tg.bind(s.value_var, i64(1), INT)
    tg.block(body)
    tg.scopes.pop()
    tg.b.store(tg.b.add(level, i64(1)), slot)
    tg.b.branch(head)
    tg.b.position_at_end(done)
    return True


def _interval_call(tg, args):
    m, gs = _index(tg, args)
    fn = _cached(tg, "interval", m, _build_interval)
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


def emit_index_rebuild(b, f, maps: dict, rebuilt: dict):
    """Each index of `rebuilt` := its definition over its (restored) map: cleared, then every
    nonzero entry added at its 64 levels (a masked index: its kept levels; plain adds: the values fitted before the batch).
    Float nodes then hold the same sums added in another order (as a fresh engine's would)."""
    for name, (base_name, pos) in rebuilt.items():
        m, base = maps[name], maps[base_name]
        b.call(m.clear_fn, [])

        def entry(bb, e, m=m, base=base, pos=pos):
            v = base.val_at(bb, e)
            with bb.if_then(base.is_nonzero(bb, v)):
                keys = bb.load(base.g_keys, typ=ir.PointerType())
                ks = [base._key_at(bb, keys, e, j) for j in range(base.K)]
                k = ks[pos]
                if base.spec.key_types[pos] == FLOAT:     # encoded as its bits (0.0 for -0.0)
                    k = bb.select(bb.icmp_signed("<", k, i64(0)), bb.xor(k, i64(I64_MAX)), k)
                u = bb.xor(k, _SIGN)
                groups = ks[:pos] + ks[pos + 1:]
                # a masked index keeps its levels up to its used bits (its mask is unchanged: it only grows)
                top = i64(63) if getattr(m, "rix_mask", None) is None else \
                    _min63(bb, _bits(bb, m, bb.load(m.rix_mask[1], typ=I64)))
                head, body, done = (f.append_basic_block(n) for n in ("rix.level", "rix.add", "rix.next"))
                pre = bb.block
                bb.branch(head)
                hb = ir.IRBuilder(head)
                level = hb.phi(I64)
                level.add_incoming(i64(0), pre)
                hb.cbranch(hb.icmp_signed("<=", level, top), body, done)
                lb = ir.IRBuilder(body)
                at = groups + [level, lb.lshr(u, level)]
                old = lb.call(m.get_fn, at)
                lb.call(m.set_fn, at + [lb.fadd(old, v) if m.vty == F64 else lb.add(old, v)])
                level.add_incoming(lb.add(level, i64(1)), lb.block)
                lb.branch(head)
                bb.position_at_end(done)
            return bb
        b = base._count_loop(f, b, b.load(base.g_count, typ=I64), entry)
    return b


RIX_BUILDERS = {"rix_key": _key, "rix_node": _node, "rix_cut": _cut, "rix_interval": _interval_call, "rix_sum": _sum_call,
                "rix_bound": _bound_call}
