"""The kept levels of a native range index (toaster/backends/llvm/range_index.py): a used region
at the top and a leaf level at the bottom, so an update touches ~14 levels instead of 64.

An index whose undo is a rebuild (range_index.rebuilt_indexes) and whose every write is a level
loop keeps, natively, only the levels leaf..top:

* top (the used region): base = the unsigned key of its first key, diff = OR of (u xor base) over
  every key u it has seen (monotone: deletions never shrink it), h = bit length of diff. Every
  key lies in the region of base's top 64 - h bits, so levels above h hold one node per group
  (its total): they are not kept. When diff grows, the new levels get the old total (`rix.grow`).
* leaf: the lowest kept level, where every node holds at most one live key (its value is then
  that key's value, bit for bit); the node's key is kept in a side map `<IDX>.leafkey[g.., leaf,
  node]`. Levels below hold nothing more. A key landing in a node that holds another live key
  lowers the leaf to the bit where the two differ (`rix.place`): every node at the old leaf pushes
  its one key down into the new levels (O(n), at most 64 times). The second distinct key ever
  seen sets the leaf (the first one's entries move from level 0 to it); after that it only moves
  down. Finance prices are doubles of one binade that differ first at bit ~39: ~14 levels kept.

`rix.unmask` (called before the engine reads or loads a map's raw entries) fills every level,
making the index full width (diff = -1, leaf = 0) from then on. Python's index functions keep
every level: interp and spark read the same answers from full maps.
"""
from __future__ import annotations

from llvmlite import ir

from toaster.backends.llvm.hashmap import F64, I64, PTR, NativeMap, i64
from toaster.backends.llvm.range_dense import build_destroy, discard, flush, install_dense, reload
from toaster.backends.llvm.range_memo import install_memo, invalidate, invalidate_all
from toaster.imperative.ir import MapSpec
from toaster.m3.range_index import LEVELS_MAP
from toaster.types import FLOAT, INT

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
SIGN = i64(I64_MIN)
MASK_FIELDS = ("base", "diff", "used", "leaf")


def cached(tg, kind: str, m, build):
    fns = tg.g.__dict__.setdefault("rix_functions", {})
    if (kind, m.name) not in fns:
        fns[(kind, m.name)] = build(m)
    return fns[(kind, m.name)]


def function(m, kind: str, ret, params):
    f = ir.Function(m.module, ir.FunctionType(ret, params), f"rix.{kind}.{m.name}")
    f.linkage = "internal"
    return f


def vadd(b, m, x, y):
    return b.fadd(x, y) if m.vty == F64 else b.add(x, y)


def install_masks(module, maps: dict, rebuilt: dict, prog) -> None:
    """Give each masked index its globals (NativeMap.rix_mask), its leaf-key map (added to
    `maps`: created, freed and compacted with the others; no undo records) and export
    `rix.unmask`: the indexes rebuilt after a rollback whose every write is a level loop
    `masked_update` takes."""
    masked = []
    writes = _level_loop_writes(prog)
    for name, m in list(maps.items()):
        m.rix_mask = m.rix_keys = m.rix_memo = None
        if name in rebuilt and m.K >= 2 and writes.get(name) is True:
            gs = []
            for field in MASK_FIELDS:
                g = ir.GlobalVariable(module, I64, f"rix.{field}.{name}")
                g.linkage, g.initializer = "internal", i64(0)
                gs.append(g)
            m.rix_mask = tuple(gs)
            spec = MapSpec(f"{name}.leafkey", m.spec.key_types, INT, "temp")
            m.rix_keys = maps[spec.name] = NativeMap(module, m.rt, spec)
            install_memo(module, maps, m)
            install_dense(module, m)
            masked.append(m)
    build_destroy(module, masked)
    f = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "rix.unmask")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    for m in masked:
        invalidate_all(b, m)
        flush(b, m)                     # full width from now on: the hash map holds it
        base_g, diff_g, used_g, leaf_g = m.rix_mask
        with b.if_else(b.icmp_unsigned("==", b.load(used_g, typ=I64), i64(0))) as (fresh, seen):
            with fresh:
                b.store(i64(1), used_g)
                b.store(i64(0), base_g)
            with seen:
                diff = b.load(diff_g, typ=I64)
                _fill(f, b, m, b.load(base_g, typ=I64), _bits(b, m, diff), i64(64))
                leaf = b.load(leaf_g, typ=I64)
                with b.if_then(b.icmp_signed(">", leaf, i64(0))):
                    _push_down(f, b, m, leaf, i64(0))
        b.store(i64(-1), diff_g)
        b.store(i64(0), leaf_g)
    b.ret_void()


def ctlz(b, m, x):
    fn = m.module.globals.get("llvm.ctlz.i64") or \
        ir.Function(m.module, ir.FunctionType(I64, [I64, ir.IntType(1)]), "llvm.ctlz.i64")
    return b.call(fn, [x, ir.Constant(ir.IntType(1), 0)])


def _bits(b, m, diff):
    """The bit length of diff (0..64)."""
    return b.sub(i64(64), ctlz(b, m, diff))


def state(b, m):
    """(base, h) of an index: h = 64 and base = 0 (every level) when it is not masked."""
    if getattr(m, "rix_mask", None) is None:
        return i64(0), i64(64)
    base_g, diff_g = m.rix_mask[:2]
    return b.load(base_g, typ=I64), _bits(b, m, b.load(diff_g, typ=I64))


def leaf_level(b, m):
    """The lowest kept level (0 when the index is not masked)."""
    if getattr(m, "rix_mask", None) is None:
        return i64(0)
    return b.load(m.rix_mask[3], typ=I64)


def leaf_key(b, m, gs, leaf, node):
    """The unsigned key a node at the leaf level holds (meaningful where its value is nonzero)."""
    if getattr(m, "rix_mask", None) is None:
        return node
    kept = b.call(m.rix_keys.get_fn, gs + [leaf, node])
    return b.select(b.icmp_signed("==", leaf, i64(0)), node, kept)


def min63(b, x):
    return b.select(b.icmp_unsigned("<", x, i64(63)), x, i64(63))


def root(b, base, h):
    """The node at level h holding every key (0 at the virtual level 64)."""
    return b.select(b.icmp_unsigned("==", h, i64(64)), i64(0), b.lshr(base, min63(b, h)))


def root_total(b, m, gs, base, h, root):
    """The sum of every key: the root's two children (level h - 1, kept: the leaf is below h
    once two keys were seen), or level 0's base when h = 0."""
    some = b.icmp_unsigned(">", h, i64(0))
    level = b.select(some, b.sub(h, i64(1)), i64(0))
    twice = b.shl(root, i64(1))
    left = b.call(m.get_fn, gs + [level, b.select(some, twice, base)])
    right = b.call(m.get_fn, gs + [level, b.or_(twice, i64(1))])
    return b.select(some, vadd(b, m, left, right), left)


def region(b, m):
    """[lo, hi] (unsigned keys) of the used region."""
    base, h = state(b, m)
    sh = min63(b, h)
    full = b.icmp_unsigned("==", h, i64(64))
    lo = b.select(full, i64(0), b.shl(b.lshr(base, sh), sh))
    span = b.select(full, i64(-1), b.sub(b.shl(i64(1), sh), i64(1)))
    return lo, b.or_(lo, span)


def _scan(f, b, m, visit):
    """visit(builder, group keys, level, node, value) for each entry of the index with a nonzero
    value present before the scan (adds append entries; pointers are reloaded per entry since
    they may grow the arrays)."""
    groups = m.K - 2

    def entry(bb, e):
        keys = bb.load(m.g_keys, typ=PTR)
        v = m.val_at(bb, e)
        with bb.if_then(m.is_nonzero(bb, v)):
            gs = [m.key_at(bb, keys, e, j) for j in range(groups)]
            visit(bb, gs, m.key_at(bb, keys, e, groups), m.key_at(bb, keys, e, groups + 1), v)
        return bb
    done = m._count_loop(f, b, b.load(m.g_count, typ=I64), entry)
    b.position_at_end(done.block)


def _fill(f, b, m, base, h_old, h_new):
    """Levels h_old + 1 .. min(h_new, 63) get each group's old total (all keys so far lie in node
    base >> l there); a no-op when h_old >= 63."""
    start = b.add(h_old, i64(1))
    top = min63(b, h_new)
    with b.if_then(b.icmp_signed("<=", start, top)):
        lvl = min63(b, h_old)
        rt = b.lshr(base, lvl)
        if m.K == 2:
            total = b.call(m.get_fn, [lvl, rt])
            with b.if_then(m.is_nonzero(b, total)):
                _fill_levels(f, b, m, [], base, start, top, total)
            return

        def visit(bb, gs, level, node, v):
            at = bb.and_(bb.icmp_unsigned("==", level, lvl), bb.icmp_unsigned("==", node, rt))
            with bb.if_then(at):
                _fill_levels(f, bb, m, gs, base, start, top, v)
        _scan(f, b, m, visit)


def _push_down(f, b, m, leaf, new_leaf):
    """The leaf level moves down to new_leaf: each node at `leaf` adds its value to the nodes of
    its one key at levels new_leaf .. leaf - 1, and that key is kept at new_leaf."""
    def visit(bb, gs, level, node, v):
        with bb.if_then(bb.icmp_unsigned("==", level, leaf)):
            k = bb.call(m.rix_keys.get_fn, gs + [leaf, node])
            _fill_levels(f, bb, m, gs, k, new_leaf, bb.sub(leaf, i64(1)), v)
            bb.call(m.rix_keys.set_fn, gs + [new_leaf, bb.lshr(k, new_leaf), k])
    _scan(f, b, m, visit)


def _fill_levels(f, b, m, gs, key, start, top, total):
    """Levels start .. top: the node of `key` (unsigned) += total."""
    head, body, done = (f.append_basic_block(n) for n in ("rix.fill", "rix.fill.add", "rix.fill.done"))
    pre = b.block
    b.branch(head)
    hb = ir.IRBuilder(head)
    level = hb.phi(I64)
    level.add_incoming(start, pre)
    hb.cbranch(hb.icmp_signed("<=", level, top), body, done)
    lb = ir.IRBuilder(body)
    m.add(lb, gs + [level, lb.lshr(key, level)], total)
    level.add_incoming(lb.add(level, i64(1)), lb.block)
    lb.branch(head)
    b.position_at_end(done)


def _umax1(b, x):
    return b.select(b.icmp_signed(">", x, i64(1)), x, i64(1))


def _build_grow(m):
    """rix.grow.M(u) -> the top level to update for key u (unsigned): records u in the mask,
    filling the levels it adds; the second distinct key sets the leaf level."""
    f = function(m, "grow", I64, [I64])
    (u,) = f.args
    base_g, diff_g, used_g, leaf_g = m.rix_mask
    entry, first, seen = (f.append_basic_block(n) for n in ("entry", "first", "seen"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("==", b.load(used_g, typ=I64), i64(0)), first, seen)
    fb = ir.IRBuilder(first)
    fb.store(i64(1), used_g)
    fb.store(u, base_g)
    fb.store(i64(0), leaf_g)            # one key: level 0 is its leaf
    fb.ret(i64(0))
    b = ir.IRBuilder(seen)
    base, diff = b.load(base_g, typ=I64), b.load(diff_g, typ=I64)
    new = b.or_(diff, b.xor(u, base))
    grew = b.icmp_unsigned("!=", new, diff)
    second = b.icmp_unsigned("==", diff, i64(0))
    with b.if_then(grew):
        flush(b, m)                     # range_dense.py: the steps below work on the hash map
    with b.if_then(b.and_(grew, b.not_(second))):
        _fill(f, b, m, base, _bits(b, m, diff), _bits(b, m, new))
    with b.if_then(b.and_(grew, second)):
        # the second distinct key: every group's one key so far is base, at level 0; the leaf
        # goes where base and u differ, base's value fills the levels leaf..top (level 0 too
        # when that is the leaf, else its entry is emptied)
        leaf = b.sub(_bits(b, m, new), i64(1))
        top = min63(b, _bits(b, m, new))

        def visit(bb, gs, level, node, v):
            at = bb.and_(bb.icmp_unsigned("==", level, i64(0)), bb.icmp_unsigned("==", node, base))
            with bb.if_then(at):
                _fill_levels(f, bb, m, gs, base, _umax1(bb, leaf), top, v)
                bb.call(m.rix_keys.set_fn, gs + [leaf, bb.lshr(base, leaf), base])
                with bb.if_then(bb.icmp_signed(">", leaf, i64(0))):
                    bb.call(m.set_fn, gs + [i64(0), base, m.zero()])
        _scan(f, b, m, visit)
        b.store(leaf, leaf_g)
    with b.if_then(grew):
        b.store(new, diff_g)
        reload(b, m)
    b.ret(min63(b, _bits(b, m, b.load(diff_g, typ=I64))))
    return f


def _build_leaf(m):
    """rix.place.M(u, groups..) -> the leaf level to update for key u (after rix.grow): records
    u as its leaf node's key, first moving the leaf down if that node holds another live key."""
    groups = m.K - 2
    f = function(m, "place", I64, [I64] + [I64] * groups)
    u, gs = f.args[0], list(f.args[1:])
    leaf_g = m.rix_mask[3]
    entry, zero, look = (f.append_basic_block(n) for n in ("entry", "zero", "look"))
    b = ir.IRBuilder(entry)
    leaf = b.load(leaf_g, typ=I64)
    b.cbranch(b.icmp_signed("==", leaf, i64(0)), zero, look)
    ir.IRBuilder(zero).ret(i64(0))      # every node holds its own key
    b = ir.IRBuilder(look)
    node = b.lshr(u, leaf)
    held = b.call(m.rix_keys.get_fn, gs + [leaf, node])
    other = b.icmp_unsigned("!=", held, u)
    live = m.is_nonzero(b, b.call(m.get_fn, gs + [leaf, node]))
    with b.if_else(b.and_(other, live)) as (clash, free):
        with clash:
            lower = b.sub(i64(63), ctlz(b, m, b.xor(held, u)))
            flush(b, m)
            _push_down(f, b, m, leaf, lower)
            b.store(lower, leaf_g)
            reload(b, m)                # before u's key is set: u has no node value to reload it by
            b.call(m.rix_keys.set_fn, gs + [lower, b.lshr(u, lower), u])
        with free:
            with b.if_then(other):
                b.call(m.rix_keys.set_fn, gs + [leaf, node, u])
    b.ret(b.load(leaf_g, typ=I64))
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
    """Emit `foreach l in RIX_LEVELS: IDX[g.., l, rix_node(k, l)] += v` for a masked IDX as a loop
    over levels leaf..top (rix.grow, then rix.place first); False (nothing emitted) for any other loop."""
    from toaster.backends.llvm.trigger_gen import encode_key
    node = _level_loop(s)
    body = s.body
    if node is None:
        return False
    m = tg.g.map(body[0].map)
    if getattr(m, "rix_mask", None) is None:
        return False
    b = tg.b
    u = b.xor(tg.typed(node.args[0], INT), SIGN)
    top = b.call(cached(tg, "grow", m, _build_grow), [u])
    gs = [encode_key(b, tg.typed(g, t), t) for g, t in zip(body[0].keys[:-2], m.spec.key_types)]
    invalidate(b, m, gs)
    leaf = b.call(cached(tg, "place", m, _build_leaf), [u] + gs)
    head, loop_body, done = (tg.fn.append_basic_block(n) for n in ("rix.level", "rix.update", "rix.next"))
    slot = tg._counter("rix.l", i64(0))
    b.store(leaf, slot)
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


def emit_index_rebuild(b, f, maps: dict, rebuilt: dict):
    """Each index of `rebuilt` := its definition over its (restored) map: cleared, then every
    nonzero entry added at its 64 levels (a masked index: its kept levels, its leaf key recorded;
    its mask and leaf are unchanged: they stay valid for a subset of the keys seen). Float nodes
    then hold the same sums added in another order (as a fresh engine's would)."""
    for name, (base_name, pos) in rebuilt.items():
        m, base = maps[name], maps[base_name]
        b.call(m.clear_fn, [])
        masked = getattr(m, "rix_mask", None) is not None
        if masked:
            discard(b, m)               # the arrays are rebuilt from the hash map after it
            b.call(m.rix_keys.clear_fn, [])
            invalidate_all(b, m)

        def entry(bb, e, m=m, base=base, pos=pos, masked=masked):
            v = base.val_at(bb, e)
            with bb.if_then(base.is_nonzero(bb, v)):
                keys = bb.load(base.g_keys, typ=ir.PointerType())
                ks = [base._key_at(bb, keys, e, j) for j in range(base.K)]
                k = ks[pos]
                if base.spec.key_types[pos] == FLOAT:     # encoded as its bits (0.0 for -0.0)
                    k = bb.select(bb.icmp_signed("<", k, i64(0)), bb.xor(k, i64(I64_MAX)), k)
                u = bb.xor(k, SIGN)
                groups = ks[:pos] + ks[pos + 1:]
                top, leaf = i64(63), i64(0)
                if masked:
                    top = min63(bb, _bits(bb, m, bb.load(m.rix_mask[1], typ=I64)))
                    leaf = bb.load(m.rix_mask[3], typ=I64)
                    bb.call(m.rix_keys.set_fn, groups + [leaf, bb.lshr(u, leaf), u])
                head, body, done = (f.append_basic_block(n) for n in ("rix.level", "rix.add", "rix.next"))
                pre = bb.block
                bb.branch(head)
                hb = ir.IRBuilder(head)
                level = hb.phi(I64)
                level.add_incoming(leaf, pre)
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
        if masked:
            reload(b, m)
    return b
