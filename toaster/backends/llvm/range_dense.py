"""Dense node arrays of an ungrouped masked range index (range_mask.py) while its kept levels
span few bits: no hash probe per level.

A masked index keeps levels leaf..top (top = h, the used region's bit length). When h <= 63 and
h - leaf <= C (C the array's bits, at most TOASTER_RIX_DENSE's cap), node (level l, n) lies at
flat offset 2^(C - j) + (n mod 2^(C - j)), j = l - leaf (a heap layout of the levels over the
region: the region holds at most 2^(C - j) contiguous nodes at level j, so they are distinct mod
2^(C - j)), and the leaf nodes' keys at n mod 2^C of a second array. While `rix.dense.<IDX>.on`
is set the arrays hold the index (the hash map's entries are stale): the index's `get` / `add`
and its leaf keys' `get` / `set` (what the level loops, rix.grow / rix.place and the reads call)
are wrappers that read or write the arrays, else the hash map.

Every structural step works on the hash map: rix.grow when the region grows, rix.place when the
leaf level moves down (each at most 64 times), the rollback's rebuild and rix.unmask. Before it
`rix.dense.flush.<IDX>` writes the arrays back into the (cleared) hash map and turns the arrays
off; after it `rix.dense.reload.<IDX>` refills them from the hash map when the span still fits
(reallocating them when it grew), else the index stays in its hash map. VWAP's prices span ~14
bits below their region: 2^15 words per index. Only ungrouped indexes (K = 2): a group's nodes
would need one array per group.

`TOASTER_RIX_DENSE=off` keeps every index in its hash map (A/B; the IR differs, so the
machine-code cache keeps both); a number sets the cap C (default 16, at most 24).
"""
from __future__ import annotations

import os

from llvmlite import ir

from toaster.backends.llvm.hashmap import I64, PTR, VOID, i64

DENSE_ENV = "TOASTER_RIX_DENSE"
DEFAULT_BITS = 16
_FIELDS = ("on", "bits", "vals", "keys")


def dense_cap() -> int:
    """The largest span (bits) an index keeps in arrays; 0: off."""
    choice = os.environ.get(DENSE_ENV, "on").strip().lower()
    if choice == "on":
        return DEFAULT_BITS
    if choice == "off":
        return 0
    if choice.isdigit() and 1 <= int(choice) <= 24:
        return int(choice)
    from toaster.errors import UsageError
    raise UsageError(f"{DENSE_ENV} must be 'on', 'off' or a number of bits 1..24, not {choice!r}")


def _global(module, name, ty):
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, None) if ty == PTR else i64(0)
    return g


def _fn(m, kind, ret, params):
    f = ir.Function(m.module, ir.FunctionType(ret, params), f"rix.dense.{kind}.{m.name}")
    f.linkage = "internal"
    return f


def _elem(b, base, idx, ty):
    return b.gep(base, [idx], inbounds=True, source_etype=ty)


def _pos(b, bits, leaf, level, node):
    """Offset of (level, node) in the value array (j clamped to 0..bits: never out of bounds)."""
    j = b.sub(level, leaf)
    j = b.select(b.icmp_unsigned(">", j, bits), bits, j)
    width = b.shl(i64(1), b.sub(bits, j))
    return b.add(width, b.and_(node, b.sub(width, i64(1))))


def _key_pos(b, bits, node):
    return b.and_(node, b.sub(b.shl(i64(1), bits), i64(1)))


def install_dense(module, m) -> None:
    """m.rix_dense: the arrays' globals and the hash map's own functions; m.get_fn / m.add_fn
    and m.rix_keys.get_fn / set_fn become the wrappers. None when off or grouped."""
    m.rix_dense = None
    cap = dense_cap()
    if cap == 0 or m.K != 2:
        return
    d = {field: _global(module, f"rix.dense.{m.name}.{field}", PTR if field in ("vals", "keys") else I64)
         for field in _FIELDS}
    d.update(cap=cap, get=m.get_fn, add=m.add_fn, kget=m.rix_keys.get_fn, kset=m.rix_keys.set_fn)
    m.rix_dense = d
    m.get_fn, m.add_fn = _build_get(m, d), _build_add(m, d)
    m.rix_keys.get_fn, m.rix_keys.set_fn = _build_key_get(m, d), _build_key_set(m, d)
    d["flush"], d["reload"] = _build_flush(m, d), _build_reload(m, d)
    for f in (d["flush"], d["reload"]):         # rare (structural steps): one copy each, not inlined
        f.attributes.add("noinline")
        f.attributes.add("cold")


def _switch(m, d, name, ret, params, dense, hashed):
    """A function of params: dense(b, args) while the arrays are on, else hashed(b, args)."""
    f = _fn(m, name, ret, params)
    entry, on, off = (f.append_basic_block(n) for n in ("entry", "on", "off"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("!=", b.load(d["on"], typ=I64), i64(0)), on, off)
    for block, emit in ((on, dense), (off, hashed)):
        bb = ir.IRBuilder(block)
        r = emit(bb, list(f.args))
        bb.ret_void() if ret == VOID else bb.ret(r)
    return f


def _val_ptr(b, m, d, level, node):
    leaf = b.load(m.rix_mask[3], typ=I64)
    pos = _pos(b, b.load(d["bits"], typ=I64), leaf, level, node)
    return _elem(b, b.load(d["vals"], typ=PTR), pos, m.vty)


def _key_ptr(b, d, node):
    return _elem(b, b.load(d["keys"], typ=PTR), _key_pos(b, b.load(d["bits"], typ=I64), node), I64)


def _build_get(m, d):
    return _switch(m, d, "get", m.vty, [I64, I64],
                   lambda b, a: b.load(_val_ptr(b, m, d, a[0], a[1]), typ=m.vty),
                   lambda b, a: b.call(d["get"], a))


def _build_add(m, d):
    def dense(b, a):
        p = _val_ptr(b, m, d, a[0], a[1])
        b.store(m.vadd(b, b.load(p, typ=m.vty), a[2]), p)      # checked for INT, as the map's add
    return _switch(m, d, "add", VOID, [I64, I64, m.vty], dense, lambda b, a: b.call(d["add"], a))


def _build_key_get(m, d):
    # only the leaf level's keys are read while the arrays are on
    return _switch(m, d, "kget", I64, [I64, I64], lambda b, a: b.load(_key_ptr(b, d, a[1]), typ=I64),
                   lambda b, a: b.call(d["kget"], a))


def _build_key_set(m, d):
    return _switch(m, d, "kset", VOID, [I64, I64, I64], lambda b, a: b.store(a[2], _key_ptr(b, d, a[1])),
                   lambda b, a: b.call(d["kset"], a))


def _loop(f, b, start, stop, body):
    """for i in [start, stop): body(builder, i); returns the builder after the loop."""
    head, loop_body, done = (f.append_basic_block(n) for n in ("loop", "body", "done"))
    pre = b.block
    b.branch(head)
    hb = ir.IRBuilder(head)
    i = hb.phi(I64)
    i.add_incoming(start, pre)
    hb.cbranch(hb.icmp_signed("<", i, stop), loop_body, done)
    lb = ir.IRBuilder(loop_body)
    lb = body(lb, i) or lb
    i.add_incoming(lb.add(i, i64(1)), lb.block)
    lb.branch(head)
    return ir.IRBuilder(done)


def _build_flush(m, d):
    """The arrays (when on) back into the cleared hash map and its leaf keys; arrays off."""
    from toaster.backends.llvm.range_mask import ctlz, region
    f = _fn(m, "flush", VOID, [])
    entry, on, off = (f.append_basic_block(n) for n in ("entry", "on", "off"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("!=", b.load(d["on"], typ=I64), i64(0)), on, off)
    ir.IRBuilder(off).ret_void()
    b = ir.IRBuilder(on)
    b.store(i64(0), d["on"])
    b.call(m.clear_fn, [])
    b.call(m.rix_keys.clear_fn, [])
    bits = b.load(d["bits"], typ=I64)
    leaf = b.load(m.rix_mask[3], typ=I64)
    rlo, _ = region(b, m)

    def entry_at(bb, pos):
        v = bb.load(_elem(bb, bb.load(d["vals"], typ=PTR), pos, m.vty), typ=m.vty)
        with bb.if_then(m.is_nonzero(bb, v)):
            top_bit = bb.sub(i64(63), ctlz(bb, m, pos))          # = bits - j
            j = bb.sub(bits, top_bit)
            level = bb.add(leaf, j)
            mask = bb.sub(bb.shl(i64(1), top_bit), i64(1))
            first = bb.lshr(rlo, level)                            # the region's first node there
            node = bb.add(first, bb.and_(bb.sub(bb.and_(pos, mask), first), mask))
            bb.call(d["add"], [level, node, v])
            with bb.if_then(bb.icmp_unsigned("==", j, i64(0))):
                k = bb.load(_elem(bb, bb.load(d["keys"], typ=PTR), _key_pos(bb, bits, node), I64), typ=I64)
                bb.call(d["kset"], [leaf, node, k])
        return bb
    b = _loop(f, b, i64(1), b.shl(i64(2), bits), entry_at)
    b.ret_void()
    return f


def _build_reload(m, d):
    """Arrays on again when the index is masked, h <= 63 and h - leaf <= cap: sized to h - leaf
    bits (at least 4), zeroed, filled from the hash map's kept levels and leaf keys."""
    from toaster.backends.llvm.range_mask import _scan, state
    f = _fn(m, "reload", VOID, [])
    entry, fits, done = (f.append_basic_block(n) for n in ("entry", "fits", "done"))
    b = ir.IRBuilder(entry)
    _, h = state(b, m)
    leaf = b.load(m.rix_mask[3], typ=I64)
    used = b.icmp_unsigned("!=", b.load(m.rix_mask[2], typ=I64), i64(0))
    span = b.sub(h, leaf)
    ok = b.and_(used, b.and_(b.icmp_signed("<=", h, i64(63)), b.icmp_signed("<=", span, i64(d["cap"]))))
    b.cbranch(ok, fits, done)
    ir.IRBuilder(done).ret_void()
    b = ir.IRBuilder(fits)
    need = b.select(b.icmp_signed("<", span, i64(4)), i64(4), span)
    old = b.load(d["bits"], typ=I64)
    vals = b.load(d["vals"], typ=PTR)
    with b.if_else(b.or_(b.icmp_signed(">", need, old), b.icmp_unsigned("==", b.ptrtoint(vals, I64), i64(0)))) \
            as (grow, reuse):
        with grow:
            b.call(m.rt.free, [vals])
            b.call(m.rt.free, [b.load(d["keys"], typ=PTR)])
            b.store(need, d["bits"])
            b.store(b.call(m.rt.calloc, [b.shl(i64(2), need), i64(8)]), d["vals"])
            b.store(b.call(m.rt.calloc, [b.shl(i64(1), need), i64(8)]), d["keys"])
        with reuse:
            b.call(m.rt.memset, [vals, ir.Constant(ir.IntType(32), 0), b.shl(i64(16), old)])
            b.call(m.rt.memset, [b.load(d["keys"], typ=PTR), ir.Constant(ir.IntType(32), 0), b.shl(i64(8), old)])
    bits = b.load(d["bits"], typ=I64)

    def visit(bb, gs, level, node, v):
        kept = bb.and_(bb.icmp_signed(">=", level, leaf), bb.icmp_signed("<=", level, h))
        with bb.if_then(kept):
            pos = _pos(bb, bits, leaf, level, node)
            bb.store(v, _elem(bb, bb.load(d["vals"], typ=PTR), pos, m.vty))
            with bb.if_then(bb.icmp_signed("==", level, leaf)):
                k = bb.call(d["kget"], [leaf, node])
                bb.store(k, _elem(bb, bb.load(d["keys"], typ=PTR), _key_pos(bb, bits, node), I64))
    _scan(f, b, m, visit)
    b.store(i64(1), d["on"])
    b.ret_void()
    return f


def flush(b, m) -> None:
    if getattr(m, "rix_dense", None) is not None:
        b.call(m.rix_dense["flush"], [])


def reload(b, m) -> None:
    if getattr(m, "rix_dense", None) is not None:
        b.call(m.rix_dense["reload"], [])


def discard(b, m) -> None:
    """Arrays off without writing them back (the rollback rebuilds the hash map)."""
    if getattr(m, "rix_dense", None) is not None:
        b.store(i64(0), m.rix_dense["on"])


def build_destroy(module, masked) -> None:
    """rix.dense.destroy: frees every index's arrays (toaster.destroy calls it)."""
    f = ir.Function(module, ir.FunctionType(VOID, []), "rix.dense.destroy")
    f.linkage = "internal"
    b = ir.IRBuilder(f.append_basic_block("entry"))
    for m in masked:
        d = getattr(m, "rix_dense", None)
        if d is None:
            continue
        for field in ("vals", "keys"):
            b.call(m.rt.free, [b.load(d[field], typ=PTR)])
            b.store(ir.Constant(PTR, None), d[field])
        b.store(i64(0), d["on"])
        b.store(i64(0), d["bits"])
    b.ret_void()
