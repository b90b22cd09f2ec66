"""A native map's exported accessors and its `load` (hashmap.py's NativeMap; split from it for
size): count / keys / vals / init / destroy, and load(n, keys, vals), which replaces the
contents. The functions take the NativeMap as `self`, as the methods they were."""
from __future__ import annotations

from llvmlite import ir

from toaster.backends.llvm.hashmap import DIRECT_KEYS, INITIAL_CAPACITY, I64, PTR, VOID, _func, i64


def build_accessors(self):
    n, m, rt = self.name, self.module, self.rt
    count = _func(m, f"{n}.count", I64, [], internal=False)
    keys = _func(m, f"{n}.keys", PTR, [], internal=False)
    vals = _func(m, f"{n}.vals", PTR, [], internal=False)
    init = _func(m, f"{n}.init", VOID, [], internal=False)
    destroy = _func(m, f"{n}.destroy", VOID, [], internal=False)
    if self.K == 0:
        ir.IRBuilder(count.append_basic_block()).ret(i64(1))
        ir.IRBuilder(keys.append_basic_block()).ret(ir.Constant(PTR, None))
        ir.IRBuilder(vals.append_basic_block()).ret(self.scalar)
        b = ir.IRBuilder(init.append_basic_block())
        b.store(self.zero(), self.scalar)
        b.ret_void()
        ir.IRBuilder(destroy.append_basic_block()).ret_void()
        return
    b = ir.IRBuilder(count.append_basic_block())
    b.ret(b.load(self.g_count, typ=I64))
    b = ir.IRBuilder(keys.append_basic_block())
    b.ret(b.load(self.g_keys, typ=PTR))
    b = ir.IRBuilder(vals.append_basic_block())
    b.ret(b.load(self.g_vals, typ=PTR))
    b = ir.IRBuilder(init.append_basic_block())
    cap, ecap = INITIAL_CAPACITY, INITIAL_CAPACITY // 2
    b.store(i64(cap), self.g_cap)
    b.store(i64(0), self.g_count)
    b.store(i64(0), self.g_zeros)
    b.store(b.call(rt.calloc, [i64(cap + (DIRECT_KEYS if self.direct else 0)), i64(8)]), self.g_slots)
    b.store(b.call(rt.calloc, [i64(ecap * self.K), i64(8)]), self.g_keys)
    b.store(b.call(rt.calloc, [i64(ecap), i64(self.vsize)]), self.g_vals)
    if self.g_stamps is not None:
        b.store(b.call(rt.calloc, [i64(ecap), i64(8)]), self.g_stamps)
    for i in range(len(self.index_sets)):
        b.store(b.call(rt.calloc, [i64(cap), i64(8)]), self.g_ix_slots[i])
        b.store(b.call(rt.calloc, [i64(ecap), i64(8)]), self.g_ix_next[i])
    b.ret_void()
    b = ir.IRBuilder(destroy.append_basic_block())
    stamps = [self.g_stamps] if self.g_stamps is not None else []
    for g in [self.g_slots, self.g_keys, self.g_vals] + stamps + self.g_ix_slots + self.g_ix_next:
        b.call(rt.free, [b.load(g, typ=PTR)])
        b.store(ir.Constant(PTR, None), g)
    b.store(i64(0), self.g_count)
    b.store(i64(0), self.g_zeros)
    b.store(i64(0), self.g_cap)
    b.ret_void()

def build_load(self):
    """<map>.load(n, keys, vals): clear, then set each of the n entries (keys row-major, K per entry)."""
    f = _func(self.module, f"{self.name}.load", VOID, [I64, PTR, PTR], internal=False)
    n, keys, vals = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    if self.K == 0:
        empty = f.append_basic_block("empty")
        one = f.append_basic_block("one")
        b.cbranch(b.icmp_signed(">", n, i64(0)), one, empty)
        b = ir.IRBuilder(empty)
        b.store(self.zero(), self.scalar)
        b.ret_void()
        b = ir.IRBuilder(one)
        b.store(b.load(vals, typ=self.vty), self.scalar)
        b.ret_void()
        return
    b.call(self.clear_fn, [])

    def put(b, e):
        v = b.load(self._elem_ptr(b, vals, e, self.vty), typ=self.vty)
        b.call(self.set_fn, [self._key_at(b, keys, e, j) for j in range(self.K)] + [v])
    self._count_loop(f, b, n, put).ret_void()

