"""Native hash maps, generated as LLVM IR with llvmlite's IRBuilder (one family of functions per MapSpec).

Layout of a map with K > 0 key components (all state lives in module globals `<map>.g.<field>`):

  entries   dense arrays indexed by entry number e in [0, count):
              keys[e*K + j]  key component j, as i64 (see `encode_key` in codegen)
              vals[e]        i64 or double value
  slots     open-addressing table (linear probing, power-of-two `cap`, load factor <= 1/2)
              slots[h] = e + 1 of the entry hashed there, 0 when empty
  indexes   one non-unique secondary index per bound-position set P (MapSpec.indexes):
              ix<i>.slots[h] = e + 1 of the head of the chain of entries sharing the partial key
                               (the key components at P), 0 when empty; same capacity as `slots`
              ix<i>.next[e]  = e' + 1 of the next entry of e's chain, 0 at the end

  direct    one-key maps only: DIRECT_KEYS more words after the cap slots (allocated, cleared,
            freed and swapped with them), direct[k] = e + 1 of the entry of key k for 0 <= k <
            DIRECT_KEYS, 0 when k has none: `find` of a present small key (broker ids, string
            ids) is one load, no hash and no probe loop; rebuilt with the slots

Entry capacity is cap/2, so all tables grow together: `grow` doubles cap, reallocates the entry
arrays and rebuilds `slots` and every index from the dense entries (a rehash).

Entries whose value becomes exactly 0 (or -0.0) are reclaimed by *compaction*, never in the middle
of a trigger (a ForEach over the map may be running): readers (ForEach loops, Python's read-back)
skip zero values, writes keep `zeros`, the number of zero-valued entries, and `compact(force)`,
which the batch entry point calls at its end, squeezes the zero entries out of the dense arrays
(order kept), picks the smallest capacity with load <= 1/4 and rebuilds `slots` and every index.
Without `force` it runs only when at least half the entries are zero, so its O(count) cost is
paid by as many zeroing writes: amortized O(1) per write, and a map never holds more than twice
its live entries after a batch. MapClear (temp and delta maps) resets count and zeroes the slot
tables.

A map with no key (K == 0) is a single global scalar `<map>.scalar`.

Trigger code updates a present small key of a one-key map inline (its direct slot, then the
value, the undo check and the zero count; `<map>.record` writes the undo record out of line) and
calls `add` out of line for any other key and to insert (O2 does not inline the whole upsert, and
inlining every probe at every site cost ~40 % more JIT time on TPC-H Q5).

Exported accessors per map (Python reads the tables back through them):
  <map>.count() -> i64, <map>.keys() -> ptr, <map>.vals() -> ptr, <map>.init(), <map>.destroy(),
  <map>.load(i64 n, i64* keys, <val>* vals)   replace the contents by n entries (keys row-major,
                                               K per entry; zero values are not stored)
  <map>.compact(i64 force)

With an undo log (undo.py), view maps record an entry's previous value before its first write in
a batch: `stamps[e]` (or the scalar's `<map>.g.stamp`) holds the log's epoch when e was recorded.
With an overflow flag (overflow.py), an integer map's `add` is checked 64-bit addition.
"""
from __future__ import annotations

from llvmlite import ir

from toaster.types import FLOAT

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

INITIAL_CAPACITY = 16      # slots; entry capacity is half of it
COMPACT_EIGHTH = 2         # compact(force) argument: compact when >= 1/8 of the entries are zero
# one-key maps also map keys in [0, DIRECT_KEYS) straight to their entry (broker ids, string ids,
# small codes): direct[k] = e + 1, 0 when k has no entry
DIRECT_KEYS = 256
HASH_SEED = 0x243F6A8885A308D3
HASH_MULT = 0x9E3779B97F4A7C15


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


class Runtime:
    """libc functions the generated code calls (their addresses are registered by the engine)."""

    NAMES = ("calloc", "realloc", "free", "memset")

    def __init__(self, module: ir.Module):
        self.calloc = ir.Function(module, ir.FunctionType(PTR, [I64, I64]), "calloc")
        self.realloc = ir.Function(module, ir.FunctionType(PTR, [PTR, I64]), "realloc")
        self.free = ir.Function(module, ir.FunctionType(VOID, [PTR]), "free")
        self.memset = ir.Function(module, ir.FunctionType(PTR, [PTR, I32, I64]), "memset")


def hash_keys(b: ir.IRBuilder, keys) -> ir.Value:
    h = i64(HASH_SEED)
    for k in keys:
        h = b.mul(b.xor(h, k), i64(HASH_MULT))
        h = b.xor(h, b.lshr(h, i64(32)))
    return h


def _global(module, name, ty, init):
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, init)
    return g


def _func(module, name, ret, args, internal=True):
    f = ir.Function(module, ir.FunctionType(ret, args), name)
    if internal:
        f.linkage = "internal"
    return f


class NativeMap:
    """Globals and functions of one map; codegen calls `get`, `add`, `clear` and the
    iteration helpers to emit uses inline into trigger code."""

    def __init__(self, module: ir.Module, runtime: Runtime, spec, undo=None, tag: int = 0, overflow=None):
        self.spec = spec
        # overflow.OverflowFlag; a batch's DELTA_<REL> sums +-1 per row: it cannot overflow
        self.overflow = overflow if spec.value_type != FLOAT and spec.kind != "delta" else None
        # temp and delta maps are refilled from scratch whenever used: they need no undo records
        self.undo = undo if spec.kind == "view" else None
        self.undo_tag = tag if self.undo is not None else None
        self.record_fn = None      # <map>.record, built at the first write site that logs
        self.name = spec.name
        self.K = len(spec.key_types)
        self.vty = F64 if spec.value_type == FLOAT else I64
        self.vsize = 8
        self.rt = runtime
        self.module = module
        # deduplicated, sorted position sets; the empty and the full set need no index
        sets = []
        for P in spec.indexes:
            P = tuple(sorted(set(P)))
            if 0 < len(P) < self.K and P not in sets:
                sets.append(P)
        self.index_sets = tuple(sets)
        self.direct = self.K == 1          # a direct table for small keys (DIRECT_KEYS)
        n = self.name
        if self.K == 0:
            self.scalar = _global(module, f"{n}.g.scalar", self.vty, 0)
            if self.undo is not None:
                self.g_stamp = _global(module, f"{n}.g.stamp", I64, 0)
        else:
            # per entry: the undo epoch it was last recorded in (only with an undo log)
            self.g_stamps = _global(module, f"{n}.g.stamps", PTR, None) if self.undo is not None else None
            self.g_cap = _global(module, f"{n}.g.cap", I64, 0)
            self.g_count = _global(module, f"{n}.g.count", I64, 0)
            self.g_zeros = _global(module, f"{n}.g.zeros", I64, 0)
            self.g_slots = _global(module, f"{n}.g.slots", PTR, None)
            self.g_keys = _global(module, f"{n}.g.keys", PTR, None)
            self.g_vals = _global(module, f"{n}.g.vals", PTR, None)
            self.g_ix_slots = [_global(module, f"{n}.g.ix{i}.slots", PTR, None) for i in range(len(sets))]
            self.g_ix_next = [_global(module, f"{n}.g.ix{i}.next", PTR, None) for i in range(len(sets))]
            # hashmap_resize builds on this module's constants: imported here, not at module level
            from toaster.backends.llvm.hashmap_resize import build_compact, build_rehash
            self._build_find()
            self._build_ix_find()
            build_rehash(self)
            self.add_fn = self._build_upsert("add", replace=False)
            self.set_fn = self._build_upsert("set", replace=True)
            self._build_get()
            self._build_clear()
            build_compact(self)
        # hashmap_access builds on this module's constants: imported here, not at module level
        from toaster.backends.llvm.hashmap_access import build_accessors, build_load
        build_accessors(self)
        build_load(self)

    def zero(self):
        return ir.Constant(self.vty, 0.0 if self.vty == F64 else 0)

    def is_nonzero(self, b, v):
        if self.vty == F64:
            return b.fcmp_unordered("!=", v, self.zero())
        return b.icmp_signed("!=", v, self.zero())

    def vadd(self, b, x, y):
        if self.vty == F64:
            return b.fadd(x, y)
        if self.overflow is not None:        # checked: an overflow fails the batch (overflow.py)
            return self.overflow.arith(b, "+", x, y, self.name)
        return b.add(x, y)

    def _bits(self, b, v):
        return b.bitcast(v, I64) if self.vty == F64 else v

    def _log(self, b, keys, old):
        if self.undo is not None:
            self.undo.emit_record(b, self.undo_tag, self._bits(b, old), keys)

    def _log_once(self, b, keys, old, e=None):
        """Record entry e's (the scalar's) old value, unless it was recorded in this batch already."""
        if self.undo is None:
            return
        if e is None:
            self.undo.emit_record_once(b, self.undo_tag, self._bits(b, old), keys, self.g_stamp)
            return
        if self.record_fn is None:
            self.record_fn = self.undo.build_record(f"{self.name}.record", self.undo_tag, self.K, self.g_stamps)
        stamp = self._elem_ptr(b, b.load(self.g_stamps, typ=PTR), e)
        self.undo.emit_record_once_via(b, stamp, self.record_fn, [e, self._bits(b, old)] + list(keys))

    def _count_zeros(self, b, old, new):
        """zeros += (new == 0) - (old == 0): one more when the entry became zero, one fewer when it
        stopped being zero (the same as (old != 0 and new == 0) - (old == 0 and new != 0))."""
        was, now = self.is_nonzero(b, old), self.is_nonzero(b, new)
        d = b.sub(b.zext(was, I64), b.zext(now, I64))
        b.store(b.add(b.load(self.g_zeros, typ=I64), d), self.g_zeros)

    def restore(self, b, keys, old_bits):
        """Write back a logged value (rollback; the log is off)."""
        old = b.bitcast(old_bits, F64) if self.vty == F64 else old_bits
        if self.K == 0:
            b.store(old, self.scalar)
        else:
            b.call(self.set_fn, list(keys) + [old])

    # ------------------------------------------------------------ helpers
    def _slot_words(self, b, cap):
        """Words of the slots allocation: the slots, then (one-key maps) the direct table."""
        return b.add(cap, i64(DIRECT_KEYS)) if self.direct else cap

    def _direct_ptr(self, b, slots, k):
        """&direct[k]: the direct table lives after the cap slots (so it is allocated, cleared,
        freed and swapped with them)."""
        cap = b.load(self.g_cap, typ=I64)
        return self._elem_ptr(b, slots, b.add(cap, k))

    def _note_direct(self, b, k, e):
        """direct[k] = e + 1 when k is small (entry e now holds key k)."""
        if not self.direct:
            return
        with b.if_then(b.icmp_unsigned("<", k, i64(DIRECT_KEYS))):
            b.store(b.add(e, i64(1)), self._direct_ptr(b, b.load(self.g_slots, typ=PTR), k))

    def _key_at(self, b, keys_ptr, e, j):
        idx = b.add(b.mul(e, i64(self.K)), i64(j))
        return b.load(b.gep(keys_ptr, [idx], inbounds=True, source_etype=I64), typ=I64)

    @staticmethod
    def _elem_ptr(b, base, idx, ty=I64):
        return b.gep(base, [idx], inbounds=True, source_etype=ty)

    def _probe(self, f, slots, mask, h0, keys_ptr, probe_keys, positions, on_empty, on_match):
        """Emit a linear-probing loop in f. on_empty(b, h) / on_match(b, h, e) emit the
        block's terminator (a return)."""
        pred = f.blocks[-1]
        entry_b = ir.IRBuilder(pred)
        loop = f.append_basic_block("probe")
        empty = f.append_basic_block("empty")
        check = f.append_basic_block("check")
        match = f.append_basic_block("match")
        nxt = f.append_basic_block("next")
        entry_b.branch(loop)
        b = ir.IRBuilder(loop)
        h = b.phi(I64, "h")
        h.add_incoming(h0, pred)
        s = b.load(self._elem_ptr(b, slots, h), typ=I64)
        b.cbranch(b.icmp_unsigned("==", s, i64(0)), empty, check)
        on_empty(ir.IRBuilder(empty), h)
        b = ir.IRBuilder(check)
        e = b.sub(s, i64(1))
        eq = ir.Constant(I1, 1)
        for k, p in zip(probe_keys, positions):
            eq = b.and_(eq, b.icmp_unsigned("==", self._key_at(b, keys_ptr, e, p), k))
        b.cbranch(eq, match, nxt)
        on_match(ir.IRBuilder(match), h, e)
        b = ir.IRBuilder(nxt)
        hn = b.and_(b.add(h, i64(1)), mask)
        h.add_incoming(hn, nxt)
        b.branch(loop)

    # ------------------------------------------------------------ find
    def _build_find(self):
        """find(k...) -> e >= 0 when present, else -1 - h with h the empty slot to insert at."""
        f = self.find = _func(self.module, f"{self.name}.find", I64, [I64] * self.K)
        b = ir.IRBuilder(f.append_basic_block("entry"))
        if self.direct:
            # a present small key: one load, no hash and no probe loop (whose varying length
            # the branch predictor misses on ~10-key maps); otherwise (or absent) the probe
            k = f.args[0]
            look = f.append_basic_block("direct")
            hit = f.append_basic_block("direct.hit")
            probe = f.append_basic_block("hash")
            b.cbranch(b.icmp_unsigned("<", k, i64(DIRECT_KEYS)), look, probe)
            b = ir.IRBuilder(look)
            s = b.load(self._direct_ptr(b, b.load(self.g_slots, typ=PTR), k), typ=I64)
            b.cbranch(b.icmp_unsigned("!=", s, i64(0)), hit, probe)
            hb = ir.IRBuilder(hit)
            hb.ret(hb.sub(s, i64(1)))
            b = ir.IRBuilder(probe)
        mask = b.sub(b.load(self.g_cap, typ=I64), i64(1))
        slots = b.load(self.g_slots, typ=PTR)
        keys = b.load(self.g_keys, typ=PTR)
        h0 = b.and_(hash_keys(b, f.args), mask)
        self._probe(f, slots, mask, h0, keys, f.args, range(self.K),
                    lambda b, h: b.ret(b.sub(i64(-1), h)),
                    lambda b, h, e: b.ret(e))

    def _build_ix_find(self):
        """ix<i>.find(pk...) -> the slot holding the chain of pk (or the empty slot for it)."""
        self.ix_find = []
        for i, P in enumerate(self.index_sets):
            f = _func(self.module, f"{self.name}.ix{i}.find", I64, [I64] * len(P))
            b = ir.IRBuilder(f.append_basic_block("entry"))
            mask = b.sub(b.load(self.g_cap, typ=I64), i64(1))
            slots = b.load(self.g_ix_slots[i], typ=PTR)
            keys = b.load(self.g_keys, typ=PTR)
            h0 = b.and_(hash_keys(b, f.args), mask)
            self._probe(f, slots, mask, h0, keys, f.args, P,
                        lambda b, h: b.ret(h), lambda b, h, e: b.ret(h))
            self.ix_find.append(f)

    def _emit_link(self, b, i, e):
        """Prepend entry e to its chain in index i."""
        P = self.index_sets[i]
        keys = b.load(self.g_keys, typ=PTR)
        pk = [self._key_at(b, keys, e, p) for p in P]
        h = b.call(self.ix_find[i], pk)
        slots = b.load(self.g_ix_slots[i], typ=PTR)
        nxt = b.load(self.g_ix_next[i], typ=PTR)
        sp = self._elem_ptr(b, slots, h)
        b.store(b.load(sp, typ=I64), self._elem_ptr(b, nxt, e))
        b.store(b.add(e, i64(1)), sp)

    # ------------------------------------------------------------ grow (rehash)
    def _count_loop(self, f, b, count, body):
        """for e in [0, count): body(builder, e); returns the builder after the loop."""
        head = f.append_basic_block("loop")
        loop_body = f.append_basic_block("body")
        done = f.append_basic_block("done")
        pre = b.block
        b.branch(head)
        b = ir.IRBuilder(head)
        e = b.phi(I64, "e")
        e.add_incoming(i64(0), pre)
        b.cbranch(b.icmp_signed("<", e, count), loop_body, done)
        b = ir.IRBuilder(loop_body)
        b = body(b, e) or b
        e.add_incoming(b.add(e, i64(1)), b.block)
        b.branch(head)
        return ir.IRBuilder(done)

    # ------------------------------------------------------------ add / get / clear
    def _build_upsert(self, op: str, replace: bool):
        """map.add(keys, v) adds v to the entry; map.set(keys, v) replaces it (both insert it)."""
        f = _func(self.module, f"{self.name}.{op}", VOID, [I64] * self.K + [self.vty])
        keys, v = list(f.args[:-1]), f.args[-1]
        b = ir.IRBuilder(f.append_basic_block("entry"))
        r = b.call(self.find, keys)
        found = f.append_basic_block("found")
        absent = f.append_basic_block("absent")
        b.cbranch(b.icmp_signed(">=", r, i64(0)), found, absent)
        b = ir.IRBuilder(found)
        self._update_at(b, keys, r, v, replace)
        b.ret_void()
        # a new key with a zero value need not be stored (reads of absent keys give 0)
        b = ir.IRBuilder(absent)
        insert = f.append_basic_block("insert")
        skip = f.append_basic_block("skip")
        b.cbranch(self.is_nonzero(b, v), insert, skip)
        ir.IRBuilder(skip).ret_void()
        b = ir.IRBuilder(insert)
        self._log(b, keys, self.zero())
        count = b.load(self.g_count, typ=I64)
        full = b.icmp_unsigned(">", b.mul(b.add(count, i64(1)), i64(2)), b.load(self.g_cap, typ=I64))
        grow = f.append_basic_block("grow")
        store = f.append_basic_block("store")
        insert_end = b.block      # the undo record (if any) opened blocks
        b.cbranch(full, grow, store)
        gb = ir.IRBuilder(grow)
        gb.call(self.rehash, [gb.mul(gb.load(self.g_cap, typ=I64), i64(2))])
        r2 = gb.call(self.find, keys)
        gb.branch(store)
        b = ir.IRBuilder(store)
        rr = b.phi(I64)
        rr.add_incoming(r, insert_end)
        rr.add_incoming(r2, grow)
        h = b.sub(i64(-1), rr)
        b.store(b.add(count, i64(1)), self._elem_ptr(b, b.load(self.g_slots, typ=PTR), h))
        self._note_direct(b, keys[0] if self.K else None, count)
        kp = b.load(self.g_keys, typ=PTR)
        for j, k in enumerate(keys):
            b.store(k, self._elem_ptr(b, kp, b.add(b.mul(count, i64(self.K)), i64(j))))
        b.store(v, self._elem_ptr(b, b.load(self.g_vals, typ=PTR), count, self.vty))
        if self.g_stamps is not None:
            b.store(self.undo.current_stamp(b), self._elem_ptr(b, b.load(self.g_stamps, typ=PTR), count))
        b.store(b.add(count, i64(1)), self.g_count)
        for i in range(len(self.index_sets)):
            self._emit_link(b, i, count)
        b.ret_void()
        return f

    def _update_at(self, b, keys, e, v, replace: bool):
        """Entry e (holding keys) := v, or += v: its undo record, zero count."""
        vp = self._elem_ptr(b, b.load(self.g_vals, typ=PTR), e, self.vty)
        old = b.load(vp, typ=self.vty)
        self._log_once(b, keys, old, e)
        new = v if replace else self.vadd(b, old, v)
        b.store(new, vp)
        self._count_zeros(b, old, new)

    def _build_get(self):
        f = self.get_fn = _func(self.module, f"{self.name}.get", self.vty, [I64] * self.K)
        b = ir.IRBuilder(f.append_basic_block("entry"))
        r = b.call(self.find, list(f.args))
        found = f.append_basic_block("found")
        absent = f.append_basic_block("absent")
        b.cbranch(b.icmp_signed(">=", r, i64(0)), found, absent)
        ir.IRBuilder(absent).ret(self.zero())
        b = ir.IRBuilder(found)
        b.ret(b.load(self._elem_ptr(b, b.load(self.g_vals, typ=PTR), r, self.vty), typ=self.vty))

    def _build_clear(self):
        f = self.clear_fn = _func(self.module, f"{self.name}.clear", VOID, [])
        b = ir.IRBuilder(f.append_basic_block("entry"))
        nonempty = f.append_basic_block("nonempty")
        done = f.append_basic_block("done")
        b.cbranch(b.icmp_signed(">", b.load(self.g_count, typ=I64), i64(0)), nonempty, done)
        ir.IRBuilder(done).ret_void()
        b = ir.IRBuilder(nonempty)
        if self.undo is not None:     # a view map cleared (replaced): record what it held
            def record(b, e):
                v = self.val_at(b, e)
                with b.if_then(self.is_nonzero(b, v)):
                    keys = b.load(self.g_keys, typ=PTR)
                    self._log(b, [self._key_at(b, keys, e, j) for j in range(self.K)], v)
                return b
            b = self._count_loop(f, b, b.load(self.g_count, typ=I64), record)
        cap = b.load(self.g_cap, typ=I64)
        if self.direct:
            b = self._clear_direct(f, b, cap)
        b.call(self.rt.memset, [b.load(self.g_slots, typ=PTR), ir.Constant(I32, 0), b.mul(cap, i64(8))])
        for g in self.g_ix_slots:
            b.call(self.rt.memset, [b.load(g, typ=PTR), ir.Constant(I32, 0), b.mul(cap, i64(8))])
        b.store(i64(0), self.g_count)
        b.store(i64(0), self.g_zeros)
        b.ret_void()

    def _clear_direct(self, f, b, cap):
        """Zero the direct table of a map being cleared: the slots of its entries' small keys when
        it has fewer entries than DIRECT_KEYS, else the whole table (a temp map keyed by broker,
        MST: ~20 cleared per event with a few entries each, memset 2 KB per clear for it)."""
        count = b.load(self.g_count, typ=I64)
        few, many, done = (f.append_basic_block(n) for n in ("direct.few", "direct.many", "direct.done"))
        b.cbranch(b.icmp_signed("<", count, i64(DIRECT_KEYS)), few, many)

        def unlink(bb, e):
            k = self._key_at(bb, bb.load(self.g_keys, typ=PTR), e, 0)
            with bb.if_then(bb.icmp_unsigned("<", k, i64(DIRECT_KEYS))):
                bb.store(i64(0), self._direct_ptr(bb, bb.load(self.g_slots, typ=PTR), k))
            return bb
        self._count_loop(f, ir.IRBuilder(few), count, unlink).branch(done)
        b = ir.IRBuilder(many)
        slots = b.load(self.g_slots, typ=PTR)
        b.call(self.rt.memset, [self._elem_ptr(b, slots, cap), ir.Constant(I32, 0), i64(DIRECT_KEYS * 8)])
        b.branch(done)
        return ir.IRBuilder(done)

    # ------------------------------------------------------------ uses emitted by codegen
    def get(self, b, keys):
        if self.K == 0:
            return b.load(self.scalar, typ=self.vty)
        return b.call(self.get_fn, list(keys))

    def add(self, b, keys, v):
        if self.K == 0:
            old = b.load(self.scalar, typ=self.vty)
            self._log_once(b, [], old)
            b.store(self.vadd(b, old, v), self.scalar)
        elif self.direct:
            # a present small key updated inline (its direct slot, no hash, no probe loop: a
            # call per upsert was ~a third of SPREAD's trigger); anything else, and inserts, out of
            # line (inlining whole probes at every site cost ~40 % more JIT time on TPC-H Q5)
            k = keys[0]
            small = b.icmp_unsigned("<", k, i64(DIRECT_KEYS))
            with b.if_else(small, likely=True) as (direct, other):
                with direct:
                    d = b.load(self._direct_ptr(b, b.load(self.g_slots, typ=PTR), k), typ=I64)
                    direct_end = b.block
                with other:
                    other_end = b.block
            s = b.phi(I64)
            s.add_incoming(d, direct_end)
            s.add_incoming(i64(0), other_end)
            with b.if_else(b.icmp_unsigned("!=", s, i64(0)), likely=True) as (found, absent):
                with found:
                    self._update_at(b, [k], b.sub(s, i64(1)), v, replace=False)
                with absent:
                    b.call(self.add_fn, [k, v])
        else:
            b.call(self.add_fn, list(keys) + [v])

    def set(self, b, keys, v):
        if self.K == 0:
            self._log_once(b, [], b.load(self.scalar, typ=self.vty))
            b.store(v, self.scalar)
        else:
            b.call(self.set_fn, list(keys) + [v])

    def clear(self, b):
        if self.K == 0:
            self._log_once(b, [], b.load(self.scalar, typ=self.vty))
            b.store(self.zero(), self.scalar)
        else:
            b.call(self.clear_fn, [])

    def index_for(self, positions) -> int | None:
        P = tuple(sorted(positions))
        return self.index_sets.index(P) if P in self.index_sets else None

    def key_at(self, b, keys_ptr, e, j):
        return self._key_at(b, keys_ptr, e, j)

    def val_at(self, b, e):
        return b.load(self._elem_ptr(b, b.load(self.g_vals, typ=PTR), e, self.vty), typ=self.vty)
