"""A native map's rehash(cap) and compact(force) (hashmap.py's NativeMap; split from it for size):
the two functions that rebuild a map's slots and indexes from its entry arrays. They take the
NativeMap as `self`, as the methods they were."""
from __future__ import annotations

from llvmlite import ir

from toaster.backends.llvm.hashmap import COMPACT_EIGHTH, INITIAL_CAPACITY, I64, PTR, VOID, _func, hash_keys, i64


def build_rehash(self):
    """rehash(cap): entry arrays resized to cap/2 (>= count), slots and indexes rebuilt."""
    rt = self.rt
    f = self.rehash = _func(self.module, f"{self.name}.rehash", VOID, [I64])
    b = ir.IRBuilder(f.append_basic_block("entry"))
    cap = f.args[0]
    ecap = b.udiv(cap, i64(2))
    b.store(cap, self.g_cap)
    b.call(rt.free, [b.load(self.g_slots, typ=PTR)])
    b.store(b.call(rt.calloc, [self._slot_words(b, cap), i64(8)]), self.g_slots)
    b.store(b.call(rt.realloc, [b.load(self.g_keys, typ=PTR), b.mul(ecap, i64(8 * self.K))]), self.g_keys)
    b.store(b.call(rt.realloc, [b.load(self.g_vals, typ=PTR), b.mul(ecap, i64(self.vsize))]), self.g_vals)
    if self.g_stamps is not None:
        b.store(b.call(rt.realloc, [b.load(self.g_stamps, typ=PTR), b.mul(ecap, i64(8))]), self.g_stamps)
    for i in range(len(self.index_sets)):
        b.call(rt.free, [b.load(self.g_ix_slots[i], typ=PTR)])
        b.store(b.call(rt.calloc, [cap, i64(8)]), self.g_ix_slots[i])
        b.store(b.call(rt.realloc, [b.load(self.g_ix_next[i], typ=PTR), b.mul(ecap, i64(8))]),
                self.g_ix_next[i])
    count = b.load(self.g_count, typ=I64)
    mask = b.sub(cap, i64(1))

    def reinsert(b, e):
        keys = b.load(self.g_keys, typ=PTR)
        slots = b.load(self.g_slots, typ=PTR)
        h0 = b.and_(hash_keys(b, [self._key_at(b, keys, e, j) for j in range(self.K)]), mask)
        # keys are distinct: probe for the first empty slot
        head = f.append_basic_block("reprobe")
        put = f.append_basic_block("put")
        pre = b.block
        b.branch(head)
        hb = ir.IRBuilder(head)
        h = hb.phi(I64, "h")
        h.add_incoming(h0, pre)
        s = hb.load(self._elem_ptr(hb, slots, h), typ=I64)
        h.add_incoming(hb.and_(hb.add(h, i64(1)), mask), head)
        hb.cbranch(hb.icmp_unsigned("==", s, i64(0)), put, head)
        pb = ir.IRBuilder(put)
        pb.store(pb.add(e, i64(1)), self._elem_ptr(pb, slots, h))
        if self.direct:
            self._note_direct(pb, self._key_at(pb, keys, e, 0), e)
        for i in range(len(self.index_sets)):
            self._emit_link(pb, i, e)
        return pb

    b = self._count_loop(f, b, count, reinsert)
    b.ret_void()


def build_compact(self):
    """compact(force): drop the zero-valued entries (force 1: always; 0: when they are at least
    half of all; COMPACT_EIGHTH: at least an eighth, the Interleaved feed's once-per-piece call,
    so that loops scan fewer dead entries), then shrink to the smallest power-of-two capacity
    >= 16 with load <= 1/4."""
    f = _func(self.module, f"{self.name}.compact", VOID, [I64], internal=False)
    self.compact_fn = f
    b = ir.IRBuilder(f.append_basic_block("entry"))
    zeros = b.load(self.g_zeros, typ=I64)
    count = b.load(self.g_count, typ=I64)
    eighth = b.icmp_unsigned("==", f.args[0], i64(COMPACT_EIGHTH))
    worth = b.icmp_unsigned(">=", b.mul(zeros, b.select(eighth, i64(8), i64(2))), count)
    go = b.and_(b.icmp_unsigned(">", zeros, i64(0)),
                b.or_(worth, b.icmp_unsigned("==", f.args[0], i64(1))))
    work = f.append_basic_block("work")
    skip = f.append_basic_block("skip")
    b.cbranch(go, work, skip)
    ir.IRBuilder(skip).ret_void()
    b = ir.IRBuilder(work)
    w = b.alloca(I64)
    b.store(i64(0), w)

    def keep(b, e):
        vals = b.load(self.g_vals, typ=PTR)
        v = b.load(self._elem_ptr(b, vals, e, self.vty), typ=self.vty)
        with b.if_then(self.is_nonzero(b, v)):
            d = b.load(w, typ=I64)
            keys = b.load(self.g_keys, typ=PTR)
            for j in range(self.K):
                k = self._key_at(b, keys, e, j)
                b.store(k, self._elem_ptr(b, keys, b.add(b.mul(d, i64(self.K)), i64(j))))
            b.store(v, self._elem_ptr(b, vals, d, self.vty))
            if self.g_stamps is not None:
                stamps = b.load(self.g_stamps, typ=PTR)
                b.store(b.load(self._elem_ptr(b, stamps, e), typ=I64), self._elem_ptr(b, stamps, d))
            b.store(b.add(d, i64(1)), w)
        return b

    b = self._count_loop(f, b, count, keep)
    live = b.load(w, typ=I64)
    b.store(live, self.g_count)
    b.store(i64(0), self.g_zeros)
    # smallest cap >= INITIAL_CAPACITY with 4 * live <= cap
    pre = b.block
    head = f.append_basic_block("size")
    dbl = f.append_basic_block("double")
    done = f.append_basic_block("sized")
    b.branch(head)
    hb = ir.IRBuilder(head)
    cap = hb.phi(I64, "cap")
    cap.add_incoming(i64(INITIAL_CAPACITY), pre)
    hb.cbranch(hb.icmp_unsigned("<", cap, hb.mul(live, i64(4))), dbl, done)
    db = ir.IRBuilder(dbl)
    cap.add_incoming(db.mul(cap, i64(2)), dbl)
    db.branch(head)
    b = ir.IRBuilder(done)
    b.call(self.rehash, [cap])
    b.ret_void()
