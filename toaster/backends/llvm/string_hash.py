"""A native string -> id hash table beside toaster.feed: a batch's STRING columns are encoded
from their Arrow buffers (offsets + UTF-8 bytes) inside the native feed call, so Python does no
per-row (and no per-batch numpy or Arrow) work for them; Python only adds each string the
engine's dictionary (StringPool) interns, once, and rebuilds the table after a collection.

Open addressing, linear probing, load <= 1/2; a slot is four words: hash, id + 1 (0: empty),
length, pointer to the table's own copy of the bytes. The hash reads 8-byte words (unaligned)
then the tail bytes. A string the table lacks makes the feed return "missing" for its batch
(nothing of that batch ran); the engine interns the batch's new strings and calls again, so
strings are found in native code the next time.

    void toaster.strhash_insert(i8* data, i32* offsets, i64* ids, i64 n)
        strings k in [0, n): bytes data[offsets[k]:offsets[k + 1]] get id ids[k]
    void toaster.strhash_clear()

build_encode adds toaster.feed's loop over a column descriptor's rows (segments of Arrow chunks,
or an ids array); StringSource is the Python side of a descriptor.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa
from llvmlite import ir

from toaster.backends.llvm.hashmap import I1, I8, I32, I64, PTR, VOID  # one set of LLVM types

SLOT = 32                  # bytes per slot
EXTERNAL = ("memcmp",)     # libc symbols the table calls


def _i64(v):
    return ir.Constant(I64, v)


def _function(m, name, ftype):
    f = m.globals.get(name)
    return f if f is not None else ir.Function(m, ftype, name)


def emit_counted_loop(func: ir.Function, b: ir.IRBuilder, n, name: str, body_fn, start=None) -> None:
    """for k in start (default 0) .. n: body_fn(b, k) (it may branch out); b is left after the loop."""
    head = func.append_basic_block(f"{name}.head")
    body = func.append_basic_block(f"{name}.body")
    done = func.append_basic_block(f"{name}.done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(I64, name)
    k.add_incoming(start if start is not None else _i64(0), pre)
    b.cbranch(b.icmp_signed("<", k, n), body, done)
    b.position_at_end(body)
    body_fn(b, k)
    k.add_incoming(b.add(k, _i64(1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def build_string_hash(m: ir.Module) -> ir.Function:
    """Add the table's globals and functions to module m; returns `strhash.find(ptr s, i64 len)
    -> i64` (the id, or -1 when the table lacks the string)."""
    tab = ir.GlobalVariable(m, PTR, "strhash.tab")
    tab.initializer = ir.Constant(PTR, None)
    mask = ir.GlobalVariable(m, I64, "strhash.mask")       # capacity - 1 (capacity 0: no table)
    mask.initializer = _i64(0)
    count = ir.GlobalVariable(m, I64, "strhash.count")
    count.initializer = _i64(0)
    calloc = _function(m, "calloc", ir.FunctionType(PTR, [I64, I64]))
    free = _function(m, "free", ir.FunctionType(VOID, [PTR]))
    memcmp = _function(m, "memcmp", ir.FunctionType(I32, [PTR, PTR, I64]))
    memcpy = m.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])

    def field(b, slot, k):
        return b.gep(slot, [_i64(8 * k)], inbounds=True, source_etype=I8)

    def slot_at(b, table, i):
        return b.gep(table, [b.mul(i, _i64(SLOT))], inbounds=True, source_etype=I8)

    def probe(b, func, table, hv, msk):
        """Open a linear probe from the hash's slot: (i, its slot, the loop's head block); the
        caller adds the next i's incoming edge."""
        first, pre = b.and_(hv, msk), b.block
        head = func.append_basic_block("probe")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, "i")
        i.add_incoming(first, pre)
        return i, slot_at(b, table, i), head

    def counted_loop(b, fn, n, name, start=None):
        emit_counted_loop(fn_, b, n, name, fn, start)

    # ---- hash(ptr s, i64 len) -> i64
    hash_fn = fn_ = ir.Function(m, ir.FunctionType(I64, [PTR, I64]), "strhash.hash")
    hash_fn.linkage = "internal"
    s, n = hash_fn.args
    b = ir.IRBuilder(hash_fn.append_basic_block("entry"))
    h = b.alloca(I64)
    b.store(b.xor(_i64(0x243F6A8885A308D3), b.mul(n, _i64(0x9E3779B97F4A7C15 - (1 << 64)))), h)
    words = b.lshr(n, _i64(3))

    def word_step(b, k):
        x = b.load(b.gep(s, [b.shl(k, _i64(3))], inbounds=True, source_etype=I8), typ=I64, align=1)
        v = b.mul(b.xor(b.load(h, typ=I64), x), _i64(0x9E3779B97F4A7C15 - (1 << 64)))
        b.store(b.xor(v, b.lshr(v, _i64(32))), h)
    counted_loop(b, word_step, words, "w")

    def byte_step(b, k):
        x = b.zext(b.load(b.gep(s, [k], inbounds=True, source_etype=I8), typ=I8), I64)
        b.store(b.mul(b.xor(b.load(h, typ=I64), x), _i64(0x100000001B3)), h)
    counted_loop(b, byte_step, n, "t", start=b.shl(words, _i64(3)))
    v = b.load(h, typ=I64)
    v = b.mul(b.xor(v, b.lshr(v, _i64(29))), _i64(0xBF58476D1CE4E5B9 - (1 << 64)))
    b.ret(b.xor(v, b.lshr(v, _i64(32))))

    # ---- find(ptr s, i64 len) -> id or -1
    find = fn_ = ir.Function(m, ir.FunctionType(I64, [PTR, I64]), "strhash.find")
    find.linkage = "internal"
    s, n = find.args
    b = ir.IRBuilder(find.append_basic_block("entry"))
    table = b.load(tab, typ=PTR)
    miss = find.append_basic_block("miss")
    start = find.append_basic_block("start")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(table, I64), _i64(0)), miss, start)
    b.position_at_end(miss)
    b.ret(_i64(-1))
    b.position_at_end(start)
    hv = b.call(hash_fn, [s, n])
    msk = b.load(mask, typ=I64)
    i, slot, head = probe(b, find, table, hv, msk)
    sid = b.load(field(b, slot, 1), typ=I64)
    nxt = find.append_basic_block("next")
    cand = find.append_basic_block("candidate")
    cmpb = find.append_basic_block("compare")
    hit = find.append_basic_block("hit")
    with b.if_then(b.icmp_signed("==", sid, _i64(0))):
        b.ret(_i64(-1))
    same = b.and_(b.icmp_unsigned("==", b.load(field(b, slot, 0), typ=I64), hv),
                  b.icmp_signed("==", b.load(field(b, slot, 2), typ=I64), n))
    b.cbranch(same, cand, nxt)
    b.position_at_end(cand)
    b.cbranch(b.icmp_signed("==", n, _i64(0)), hit, cmpb)
    b.position_at_end(cmpb)
    eq = b.call(memcmp, [b.load(field(b, slot, 3), typ=PTR), s, n])
    b.cbranch(b.icmp_signed("==", eq, ir.Constant(I32, 0)), hit, nxt)
    b.position_at_end(hit)
    b.ret(b.sub(sid, _i64(1)))
    b.position_at_end(nxt)
    i.add_incoming(b.and_(b.add(i, _i64(1)), msk), nxt)
    b.branch(head)

    # ---- place(table, mask, slot words...): the first empty slot from the hash on
    place = fn_ = ir.Function(m, ir.FunctionType(VOID, [PTR, I64, I64, I64, I64, PTR]), "strhash.place")
    place.linkage = "internal"
    t, msk, hv, idp1, ln, copy = place.args
    b = ir.IRBuilder(place.append_basic_block("entry"))
    found = place.append_basic_block("found")
    i, slot, head = probe(b, place, t, hv, msk)
    empty = b.icmp_signed("==", b.load(field(b, slot, 1), typ=I64), _i64(0))
    i.add_incoming(b.and_(b.add(i, _i64(1)), msk), head)
    b.cbranch(empty, found, head)
    b.position_at_end(found)
    b.store(hv, field(b, slot, 0))
    b.store(idp1, field(b, slot, 1))
    b.store(ln, field(b, slot, 2))
    b.store(copy, field(b, slot, 3))
    b.ret_void()

    # ---- put(ptr s, i64 len, i64 id + 1): a copy of the string into the table
    put = fn_ = ir.Function(m, ir.FunctionType(VOID, [PTR, I64, I64]), "strhash.put")
    put.linkage = "internal"
    src, ln, idp1 = put.args
    b = ir.IRBuilder(put.append_basic_block("entry"))
    cap = b.select(b.icmp_unsigned("==", b.ptrtoint(b.load(tab, typ=PTR), I64), _i64(0)), _i64(0),
                   b.add(b.load(mask, typ=I64), _i64(1)))
    full = b.icmp_signed(">", b.mul(b.add(b.load(count, typ=I64), _i64(1)), _i64(2)), cap)
    with b.if_then(full, likely=False):
        new_cap = b.select(b.icmp_signed("<", cap, _i64(64)), _i64(64), b.mul(cap, _i64(2)))
        new = b.call(calloc, [new_cap, _i64(SLOT)])
        new_mask = b.sub(new_cap, _i64(1))
        old = b.load(tab, typ=PTR)

        def move(b, k):
            sl = slot_at(b, old, k)
            idp1 = b.load(field(b, sl, 1), typ=I64)
            with b.if_then(b.icmp_signed("!=", idp1, _i64(0))):
                b.call(place, [new, new_mask, b.load(field(b, sl, 0), typ=I64), idp1,
                               b.load(field(b, sl, 2), typ=I64), b.load(field(b, sl, 3), typ=PTR)])
        counted_loop(b, move, cap, "move")
        b.call(free, [old])
        b.store(new, tab)
        b.store(new_mask, mask)
    copy = b.call(calloc, [b.add(ln, _i64(1)), _i64(1)])
    b.call(memcpy, [copy, src, ln, ir.Constant(I1, 0)])
    b.call(place, [b.load(tab, typ=PTR), b.load(mask, typ=I64), b.call(hash_fn, [copy, ln]), idp1, ln, copy])
    b.store(b.add(b.load(count, typ=I64), _i64(1)), count)
    b.ret_void()

    # ---- insert(data, offsets, ids, n)
    insert = fn_ = ir.Function(m, ir.FunctionType(VOID, [PTR, PTR, PTR, I64]), "toaster.strhash_insert")
    data, offs, ids, total = insert.args
    b = ir.IRBuilder(insert.append_basic_block("entry"))

    def insert_one(b, k):
        lo = b.sext(b.load(b.gep(offs, [k], inbounds=True, source_etype=I32), typ=I32), I64)
        hi = b.sext(b.load(b.gep(offs, [b.add(k, _i64(1))], inbounds=True, source_etype=I32), typ=I32), I64)
        idp1 = b.add(b.load(b.gep(ids, [k], inbounds=True, source_etype=I64), typ=I64), _i64(1))
        b.call(put, [b.gep(data, [lo], inbounds=True, source_etype=I8), b.sub(hi, lo), idp1])
    counted_loop(b, insert_one, total, "k")
    b.ret_void()

    find_or_add = _build_new_strings(m, find, put)

    # ---- clear()
    clear = fn_ = ir.Function(m, ir.FunctionType(VOID, []), "toaster.strhash_clear")
    b = ir.IRBuilder(clear.append_basic_block("entry"))
    old = b.load(tab, typ=PTR)
    with b.if_then(b.icmp_unsigned("!=", b.ptrtoint(old, I64), _i64(0))):
        def release(b, k):
            sl = slot_at(b, old, k)
            with b.if_then(b.icmp_signed("!=", b.load(field(b, sl, 1), typ=I64), _i64(0))):
                b.call(free, [b.load(field(b, sl, 3), typ=PTR)])
        counted_loop(b, release, b.add(b.load(mask, typ=I64), _i64(1)), "free")
        b.call(free, [old])
    b.store(ir.Constant(PTR, None), tab)
    b.store(_i64(0), mask)
    b.store(_i64(0), count)
    b.ret_void()
    return find_or_add


def _grown_buffer(b, realloc, buf, cap, need, least: int):
    """Make global buffer `buf` (capacity global `cap`, bytes) hold `need` bytes: realloc to
    max(2 * cap, need, least) when short."""
    old_cap = b.load(cap, typ=I64)
    with b.if_then(b.icmp_signed(">", need, old_cap), likely=False):
        want = b.select(b.icmp_signed(">", need, b.mul(old_cap, _i64(2))), need, b.mul(old_cap, _i64(2)))
        want = b.select(b.icmp_signed("<", want, _i64(least)), _i64(least), want)
        b.store(b.call(realloc, [b.load(buf, typ=PTR), want]), buf)
        b.store(want, cap)
    return b.load(buf, typ=PTR)


def _build_new_strings(m: ir.Module, find, put) -> ir.Function:
    """`strhash.find_or_add(ptr s, i64 len) -> i64`: find; a string the table lacks gets the next
    id natively when `strhash.assign` is set (the dictionary has no per-string tables to fill),
    appended to the log (`strhash.log`: bytes, `strhash.log_offs`: i64 end offsets after a 0),
    which StringPool reads when something needs the strings (NEW STRINGS in the module text)."""
    def glob(name, ty=I64, init=None):
        g = ir.GlobalVariable(m, ty, name)
        g.initializer = init if init is not None else _i64(0)
        return g
    assign, nxt = glob("strhash.assign"), glob("strhash.next")
    log, log_cap, log_len = glob("strhash.log", PTR, ir.Constant(PTR, None)), glob("strhash.log_cap"), \
        glob("strhash.log_len")
    offs, offs_cap, log_count = glob("strhash.log_offs", PTR, ir.Constant(PTR, None)), \
        glob("strhash.log_offs_cap"), glob("strhash.log_count")
    realloc = _function(m, "realloc", ir.FunctionType(PTR, [PTR, I64]))
    memcpy = m.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])

    f = ir.Function(m, ir.FunctionType(I64, [PTR, I64]), "strhash.find_or_add")
    f.linkage = "internal"
    s, n = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    found = b.call(find, [s, n])
    add = f.append_basic_block("add")
    done = f.append_basic_block("done")
    lacks = b.and_(b.icmp_signed("<", found, _i64(0)), b.icmp_signed("!=", b.load(assign, typ=I64), _i64(0)))
    b.cbranch(lacks, add, done)
    b.position_at_end(done)
    b.ret(found)
    b.position_at_end(add)
    sid = b.load(nxt, typ=I64)
    b.store(b.add(sid, _i64(1)), nxt)
    b.call(put, [s, n, b.add(sid, _i64(1))])
    at = b.load(log_len, typ=I64)
    end = b.add(at, n)
    data = _grown_buffer(b, realloc, log, log_cap, end, 1 << 16)
    b.call(memcpy, [b.gep(data, [at], inbounds=True, source_etype=I8), s, n, ir.Constant(I1, 0)])
    b.store(end, log_len)
    k = b.load(log_count, typ=I64)
    ends = _grown_buffer(b, realloc, offs, offs_cap, b.mul(b.add(k, _i64(2)), _i64(8)), 1 << 13)
    b.store(_i64(0), ends)                   # offsets[0]: the log starts at byte 0
    b.store(end, b.gep(ends, [b.add(k, _i64(1))], inbounds=True, source_etype=I64))
    b.store(b.add(k, _i64(1)), log_count)
    b.ret(sid)

    # ---- log_free(): the log's memory back (the engine is closing: nothing reads it any more)
    free = _function(m, "free", ir.FunctionType(VOID, [PTR]))
    g = ir.Function(m, ir.FunctionType(VOID, []), "toaster.strhash_log_free")
    b = ir.IRBuilder(g.append_basic_block("entry"))
    for buf in (log, offs):
        b.call(free, [b.load(buf, typ=PTR)])
        b.store(ir.Constant(PTR, None), buf)
    for cell in (log_cap, log_len, offs_cap, log_count):
        b.store(_i64(0), cell)
    b.ret_void()
    return f


class NativeStringHash:
    """Python's side: add strings (with their ids) to the native table, or empty it; let it
    give new strings ids itself (`assign_from`) and read the strings it gave ids (`take_new`)."""

    def __init__(self, function_address, global_address):
        self._insert = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
            function_address("toaster.strhash_insert"))
        self.clear = ctypes.CFUNCTYPE(None)(function_address("toaster.strhash_clear"))
        cell = {name: ctypes.c_int64.from_address(global_address("strhash." + name))
                for name in ("assign", "next", "log", "log_len", "log_count", "log_offs")}
        self._assign, self._next, self._log, self._log_len, self.log_count, self._log_offs = (
            cell["assign"], cell["next"], cell["log"], cell["log_len"], cell["log_count"], cell["log_offs"])

    def assign_from(self, next_id: int | None) -> None:
        """New strings get ids next_id, next_id + 1, ... natively (None: they make the feed
        return MISSING instead). The caller reads them with take_new before it hands out ids."""
        self._assign.value = 0 if next_id is None else 1
        self._next.value = next_id or 0

    def take_new(self) -> list:
        """The strings given ids natively since the last call, in id order (the log emptied)."""
        n = self.log_count.value
        if not n:
            return []
        offsets = pa.foreign_buffer(self._log_offs.value, 8 * (n + 1))
        data = pa.foreign_buffer(self._log.value, self._log_len.value)
        strs = pa.LargeStringArray.from_buffers(n, offsets, data).to_pylist()
        self.log_count.value = 0
        self._log_len.value = 0
        return strs

    def add(self, ids: list, strings: list) -> None:
        """Add strings[i] for every i in ids (strings that are not valid UTF-8 text -- lone
        surrogates, which no Arrow column holds -- are left out: they are never looked up)."""
        strs = [strings[i] for i in ids]
        try:
            arr = pa.array(strs, type=pa.string())
        except (pa.ArrowException, UnicodeError):
            keep = [k for k, s in enumerate(strs) if _utf8(s)]
            ids, strs = [ids[k] for k in keep], [strs[k] for k in keep]
            arr = pa.array(strs, type=pa.string())
        if not len(arr):
            return
        _, offsets, data = arr.buffers()
        ida = np.ascontiguousarray(ids, dtype=np.int64)
        self._insert(0 if data is None else data.address, offsets.address + 4 * arr.offset,
                     ida.ctypes.data, len(ida))


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeError:
        return False


def build_encode(m, find) -> ir.Function:
    """feed.encode(desc, start, n, out) -> ids pointer: a descriptor's rows [start, start + n) as
    ids (an ids descriptor: a pointer into its array; segments: encoded into out), or null when
    some string is not in the hash table."""
    f = ir.Function(m, ir.FunctionType(PTR, [PTR, I64, I64, PTR]), "feed.encode")
    f.linkage = "internal"
    desc, start, n, out = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def at(k):                   # desc[k]
        return b.load(b.gep(desc, [k], inbounds=True, source_etype=I64), typ=I64)
    nseg = at(_i64(0))
    ids_mode = f.append_basic_block("ids")
    segs = f.append_basic_block("segments")
    b.cbranch(b.icmp_signed("==", nseg, _i64(0)), ids_mode, segs)
    b.position_at_end(ids_mode)
    b.ret(b.gep(b.inttoptr(at(_i64(1)), PTR), [start], inbounds=True, source_etype=I64))
    b.position_at_end(segs)
    stop = b.add(start, n)
    missed = b.alloca(I1)        # some string was not found (its row holds -1; every row is done)
    b.store(ir.Constant(I1, 0), missed)
    seg_head = f.append_basic_block("seg.head")
    seg_body = f.append_basic_block("seg.body")
    seg_next = f.append_basic_block("seg.next")
    done = f.append_basic_block("done")
    b.branch(seg_head)
    b.position_at_end(seg_head)
    k = b.phi(I64, "k")
    k.add_incoming(_i64(0), segs)
    b.cbranch(b.icmp_signed("<", k, nseg), seg_body, done)
    b.position_at_end(seg_body)
    base = b.add(_i64(1), b.mul(k, _i64(3)))
    r0, r1 = at(base), at(b.add(base, _i64(3)))
    offs = b.inttoptr(at(b.add(base, _i64(1))), PTR)
    data = b.inttoptr(at(b.add(base, _i64(2))), PTR)
    lo = b.select(b.icmp_signed(">", r0, start), r0, start)
    hi = b.select(b.icmp_signed("<", r1, stop), r1, stop)
    row_head = f.append_basic_block("row.head")
    row_body = f.append_basic_block("row.body")
    b.branch(row_head)
    b.position_at_end(row_head)
    row = b.phi(I64, "row")
    row.add_incoming(lo, seg_body)
    b.cbranch(b.icmp_signed("<", row, hi), row_body, seg_next)
    b.position_at_end(row_body)
    local = b.sub(row, r0)
    o0 = b.sext(b.load(b.gep(offs, [local], inbounds=True, source_etype=I32), typ=I32), I64)
    o1 = b.sext(b.load(b.gep(offs, [b.add(local, _i64(1))], inbounds=True, source_etype=I32), typ=I32), I64)
    sid = b.call(find, [b.gep(data, [o0], inbounds=True, source_etype=I8), b.sub(o1, o0)])
    was, now = b.load(missed, typ=I1), b.icmp_signed("<", sid, _i64(0))
    first_row = m.globals["feed.miss_row"]
    b.store(b.select(b.and_(now, b.not_(was)), b.sub(row, start), b.load(first_row, typ=I64)), first_row)
    b.store(b.or_(was, now), missed)
    b.store(sid, b.gep(out, [b.sub(row, start)], inbounds=True, source_etype=I64))
    row.add_incoming(b.add(row, _i64(1)), b.block)
    b.branch(row_head)
    b.position_at_end(seg_next)
    k.add_incoming(b.add(k, _i64(1)), seg_next)
    b.branch(seg_head)
    b.position_at_end(done)
    b.ret(b.select(b.load(missed, typ=I1), ir.Constant(PTR, None), out))
    return f


class StringSource:
    """The descriptor of a plain Arrow string column without nulls (see the module docstring),
    built as far as batches have reached (a whole file's column has hundreds of chunks, ~3 us
    each), kept per column object (the column held so that its buffers stay where the
    descriptor says); address None for any other column."""
    __slots__ = ("col", "address", "rows", "total", "_words", "_next", "_desc")

    def __init__(self, col):
        self.col, self.address, self.rows, self._words, self._next = col, None, 0, [0, 0], 0
        self.total = len(col) if isinstance(col, (pa.Array, pa.ChunkedArray)) else 0
        if (col.__class__ in (pa.ChunkedArray, pa.StringArray) and col.type == pa.string()
                and not col.null_count and self.total):
            self.extend(1)

    def extend(self, rows: int) -> None:
        """Cover at least `rows` rows (and twice the chunks covered so far)."""
        col, words = self.col, self._words
        chunks = col.num_chunks if col.__class__ is pa.ChunkedArray else 1
        stop = min(chunks, max(2 * self._next, self._next + 1))
        k = self._next
        while k < chunks and (k < stop or self.rows < rows):
            c = col.chunk(k) if chunks > 1 or col.__class__ is pa.ChunkedArray else col
            k += 1
            if not len(c):
                continue
            _, offsets, data = c.buffers()
            words[-1:] = [self.rows, offsets.address + 4 * c.offset, 0 if data is None else data.address]
            self.rows += len(c)
            words.append(self.rows)
            words[0] += 1
        self._next = k
        if words[0]:
            self._desc = np.array(words, np.int64)
            self.address = self._desc.ctypes.data
