"""The llvm engine's batch entry point `toaster.feed`: one native call per group of batches (one
step of a stream: a Batch per relation), with the per-batch fixed work that Python did before
(column addresses, dtype/length checks, the undo log's switch and trim, the failure test) done
natively, so that Python's share of a 1,000-row batch is a few dictionary lookups and slot
stores plus one ctypes call (about 1-2 us) instead of 6-25 us.

The caller passes CPython object addresses (`id()`), not data addresses: the native code reads the
numpy arrays' and the columns tuple's fields itself (`ObjectLayout`: offsets of CPython's tuple and
numpy's PyArrayObject, both part of their C ABIs, verified on live objects before the engine uses
them; `probe_layout` returns None on any other layout and the engine keeps its Python path). A
column is taken only when it is exactly a numpy.ndarray with the canonical dtype object, one
dimension of the batch's length, C-contiguous and aligned; anything else makes the call return
"not canonical" before any batch of the group ran, and the engine checks and converts in Python.

    i64 toaster.feed(i64 count, i64* slots)
slots[0]: 1 when the undo log must be on for every batch (some live string has an invalid entry in
a fallible string table); slots[1]: unused. Then `count` records of `width` words:
    relation index, id(signs), id(columns), then per STRING column read: descriptor address, start
or, for an Interleaved (several relations' events in stream order, feed_interleaved.py):
    INTERLEAVED (-1), id(tags), address of its plan (relation index, id(signs), id(columns) per part)
A descriptor (an int64 array Python keeps per Arrow column, string_hash.StringSource) is either
[0, address of int64 ids] (ids of rows start...), or [segments, (first row, address of the int32
offsets of that row, address of the UTF-8 bytes) per segment, rows]: the column's Arrow chunks,
whose rows [start, start + n) native code encodes through the string hash table
(string_hash.py) into a scratch buffer -- no Python, numpy or Arrow call per batch.
Returns 0 (all ran), or (i << 2) | 1 (batch i is not canonical; no batch ran), or (i << 2) | 2
(batch i failed natively -- an integer overflow or a failing string function -- and was rolled
back when the log was on; the batches before it ran), or (i << 2) | 3 (batch i holds a string
the hash table lacks; it did not run, the batches before it did).

`feed.clock` (-1: off) is a clock id for clock_gettime; when set, each call adds its duration in
nanoseconds to `feed.ns` (the native share of apply time that bench reports) and counts itself in
`feed.calls`.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pyarrow.compute as pc
from llvmlite import ir

from toaster.types import BOOL, FLOAT, STRING
from toaster.backends.llvm.hashmap import COMPACT_EIGHTH, I8, I32, I64, PTR, VOID  # one set of LLVM types
from toaster.backends.llvm.feed_interleaved import INTERLEAVED, MAX_PARTS, InterleavedEmitter, item_size
from toaster.backends.llvm.string_hash import (EXTERNAL as STRING_HASH_EXTERNAL, StringSource, build_encode,
                                               build_string_hash, emit_counted_loop)

HEADER = 2                       # slots before the first record
NOT_CANONICAL, FAILED, MISSING = 1, 2, 3
# feed.consts: addresses of the type and dtype objects the checks compare with (filled by the engine)
CONSTS = ("ndarray", "tuple", "int8", "int64", "float64", "bool")
NPY_C_CONTIGUOUS_ALIGNED = 0x0001 | 0x0100
EXTERNAL = ("clock_gettime",) + STRING_HASH_EXTERNAL    # libc symbols the module calls


@dataclass(frozen=True)
class ObjectLayout:
    """Byte offsets in CPython objects: ob_type; a tuple's ob_size and first item; a numpy
    array's data pointer, nd (int), dimensions pointer, descr, flags (int)."""
    ob_type: int = 8
    tuple_size: int = 16
    tuple_items: int = 24
    data: int = 16
    nd: int = 24
    dims: int = 32
    descr: int = 56
    flags: int = 64


def probe_layout() -> ObjectLayout | None:
    """The layout if live objects of this interpreter and numpy have it, else None."""
    lay = ObjectLayout()
    try:
        a = np.arange(5, dtype=np.int64)
        t = (a, None, "x")
        word = ctypes.c_int64.from_address
        i32 = ctypes.c_int32.from_address
        ok = (word(id(t) + lay.ob_type).value == id(tuple) and word(id(t) + lay.tuple_size).value == 3
              and all(word(id(t) + lay.tuple_items + 8 * j).value == id(x) for j, x in enumerate(t))
              and word(id(a) + lay.ob_type).value == id(np.ndarray)
              and word(id(a) + lay.data).value == a.ctypes.data and i32(id(a) + lay.nd).value == 1
              and word(word(id(a) + lay.dims).value).value == 5
              and word(id(a) + lay.descr).value == id(a.dtype)
              and i32(id(a) + lay.flags).value & NPY_C_CONTIGUOUS_ALIGNED == NPY_C_CONTIGUOUS_ALIGNED)
        b = a[::2]      # not contiguous: the flag must say so
        ok = ok and not i32(id(b) + lay.flags).value & 1 and word(word(id(b) + lay.dims).value).value == 3
        return lay if ok else None
    except Exception:
        return None


def const_values() -> list:
    return [id(np.ndarray), id(tuple), id(np.dtype(np.int8)), id(np.dtype(np.int64)),
            id(np.dtype(np.float64)), id(np.dtype(np.bool_))]


@dataclass(frozen=True)
class FeedRelation:
    """What toaster.feed needs of one relation: its process_<REL>, its columns' types, which
    columns the triggers read, and which of those are STRING (taken from the record's slots)."""
    index: int
    process: str
    types: tuple
    read: tuple              # per column: read by some trigger
    strings: tuple = ()      # positions of the STRING columns read (set from types and read)

    def __post_init__(self):
        object.__setattr__(self, "strings", tuple(j for j, (t, r) in enumerate(zip(self.types, self.read))
                                                  if r and t == STRING))


def record_width(relations) -> int:
    return 3 + 2 * max((len(r.strings) for r in relations), default=0)


def _i64(v):
    return ir.Constant(I64, v)


def build_feed_ir(relations, logged_always: bool, has_undo: bool, error_symbols, layout: ObjectLayout,
                  triple: str) -> str:
    """LLVM IR text of toaster.feed over `relations` (FeedRelation), to be linked into the
    program's module (its process_<REL>, undo log and failure globals are declared external)."""
    m = ir.Module(name="toaster.feed")
    m.triple = triple
    width = record_width(relations)

    def ext_global(name, ty=I64, internal_init=None):
        g = ir.GlobalVariable(m, ty, name)
        if internal_init is not None:
            g.initializer = internal_init
        return g
    consts = ext_global("feed.consts", ir.ArrayType(I64, len(CONSTS)), ir.Constant(ir.ArrayType(I64, len(CONSTS)), None))
    clock = ext_global("feed.clock", I64, _i64(-1))
    ns = ext_global("feed.ns", I64, _i64(0))
    calls = ext_global("feed.calls", I64, _i64(0))      # timed calls (the clock reads' cost: engine.py)
    # columns no trigger reads: process_<REL> still loads row i of every column (batch mode keys
    # DELTA_<REL> by all of them), so they point at n zero words, grown as batches grow
    zeros = ext_global("feed.zeros", PTR, ir.Constant(PTR, None))
    zeros_cap = ext_global("feed.zeros_cap", I64, _i64(0))
    calloc = ir.Function(m, ir.FunctionType(PTR, [I64, I64]), "calloc")
    free = ir.Function(m, ir.FunctionType(VOID, [PTR]), "free")
    site = ext_global("overflow.site")
    deferred = ext_global("compact.deferred")
    compact = ir.Function(m, ir.FunctionType(VOID, [I64]), "toaster.compact")
    errors = [ext_global(s) for s in error_symbols]
    if has_undo:
        undo_on = ext_global("undo.on")
        rollback = ir.Function(m, ir.FunctionType(VOID, []), "toaster.rollback")
        trim = ir.Function(m, ir.FunctionType(VOID, []), "toaster.undo_trim")
    gettime = ir.Function(m, ir.FunctionType(I32, [I32, PTR]), "clock_gettime")
    # the STRING columns' ids of the batch being run (n words per column read), grown as batches grow
    sids = ext_global("feed.sids", PTR, ir.Constant(PTR, None))
    sids_cap = ext_global("feed.sids_cap", I64, _i64(0))
    miss = ext_global("feed.miss", I64, _i64(0))     # the string column (k) of a MISSING return
    ext_global("feed.miss_row", I64, _i64(0))         # ... and its first row the table lacks
    encode = build_encode(m, build_string_hash(m))
    procs = {r.index: ir.Function(m, ir.FunctionType(VOID, [I64, PTR] + [PTR] * len(r.types)), r.process)
             for r in relations}

    inner = ir.Function(m, ir.FunctionType(I64, [I64, PTR]), "feed.inner")
    inner.linkage = "internal"
    count, slots = inner.args
    b = ir.IRBuilder(inner.append_basic_block("entry"))

    def word(ptr, k):            # the i64 at byte offset k of ptr
        return b.load(b.gep(ptr, [_i64(k)], inbounds=True, source_etype=I8), typ=I64)

    def half(ptr, k):
        return b.load(b.gep(ptr, [_i64(k)], inbounds=True, source_etype=I8), typ=I32)

    def const(name):
        return b.load(b.gep(consts, [_i64(0), _i64(CONSTS.index(name))], inbounds=True,
                            source_etype=consts.value_type), typ=I64)

    def slot(rec, k):
        return b.load(b.gep(rec, [_i64(k)], inbounds=True, source_etype=I64), typ=I64)

    def as_ptr(v):
        return b.inttoptr(v, PTR)

    def require(cond, i):
        with b.if_then(b.not_(cond), likely=False):
            fail(i, NOT_CANONICAL)

    def require_array(obj, dtype, i):
        """Return to the caller unless obj is a 1-d, contiguous, aligned ndarray with the dtype
        object; each test only after the ones that make its read safe. Returns its length."""
        require(b.icmp_unsigned("==", word(obj, layout.ob_type), const("ndarray")), i)
        ok = b.icmp_unsigned("==", word(obj, layout.descr), const(dtype))
        ok = b.and_(ok, b.icmp_signed("==", half(obj, layout.nd), ir.Constant(I32, 1)))
        flags = b.and_(half(obj, layout.flags), ir.Constant(I32, NPY_C_CONTIGUOUS_ALIGNED))
        require(b.and_(ok, b.icmp_unsigned("==", flags, ir.Constant(I32, NPY_C_CONTIGUOUS_ALIGNED))), i)
        return b.load(as_ptr(word(obj, layout.dims)), typ=I64)

    dtype_of = {FLOAT: "float64", BOOL: "bool"}

    def loop(body_fn, name):
        """for i in 0..count: body_fn(i, rec) (it may branch out); returns the block after."""
        def record(b, i):
            body_fn(i, b.gep(slots, [b.add(_i64(HEADER), b.mul(i, _i64(width)))], inbounds=True, source_etype=I64))
        emit_counted_loop(inner, b, count, name, record)

    def per_relation(rec, fn, name):
        """Switch on the record's relation index: fn(relation) in the relation's case."""
        after = inner.append_basic_block(f"{name}.next")
        bad = inner.append_basic_block(f"{name}.unknown")
        sw = b.switch(slot(rec, 0), bad)
        for r in relations:
            case = inner.append_basic_block(f"{name}.{r.process}")
            sw.add_case(_i64(r.index), case)
            b.position_at_end(case)
            fn(r)
            b.branch(after)
        b.position_at_end(bad)
        b.unreachable()
        b.position_at_end(after)

    def fail(i, kind):
        b.store(_i64(0), deferred)      # a return from inside an Interleaved run
        b.ret(b.or_(b.shl(i, _i64(2)), _i64(kind)))

    def check_part(r, signs, cols, i):
        """Return unless signs and the columns r's triggers read are canonical; their length."""
        n = require_array(signs, "int8", i)
        require(b.icmp_signed(">", n, _i64(0)), i)
        require(b.icmp_unsigned("==", word(cols, layout.ob_type), const("tuple")), i)
        require(b.icmp_signed("==", word(cols, layout.tuple_size), _i64(len(r.types))), i)
        for j, (t, read) in enumerate(zip(r.types, r.read)):
            if not read or t == STRING:
                continue
            col = as_ptr(word(cols, layout.tuple_items + 8 * j))
            require(b.icmp_signed("==", require_array(col, dtype_of.get(t, "int64"), i), n), i)
        return n

    def ensure_zeros(n):
        if not all(all(r.read) for r in relations):
            with b.if_then(b.icmp_signed(">", n, b.load(zeros_cap, typ=I64)), likely=False):
                b.call(free, [b.load(zeros, typ=PTR)])
                b.store(b.call(calloc, [n, _i64(8)]), zeros)
                b.store(n, zeros_cap)

    def call_part(r, n, row, signs, cols, ids=None):
        """process_<REL>(n, rows row.. of signs and cols); STRING columns from ids (row 0)."""
        def at(ptr, size):
            return b.gep(ptr, [b.mul(row, _i64(size))], inbounds=True, source_etype=I8)
        args = [n, at(as_ptr(word(signs, layout.data)), 1)]
        for j, (t, read) in enumerate(zip(r.types, r.read)):
            if not read:
                args.append(b.load(zeros, typ=PTR))
            elif t == STRING:
                args.append(ids[j])
            else:
                args.append(at(as_ptr(word(as_ptr(word(cols, layout.tuple_items + 8 * j)), layout.data)), item_size(t)))
        b.call(procs[r.index], args)

    mixed = InterleavedEmitter(SimpleNamespace(
        b=b, inner=inner, layout=layout, word=word, slot=slot, as_ptr=as_ptr, require=require,
        require_array=require_array, check_part=check_part, call_part=call_part, ensure_zeros=ensure_zeros,
        fail_not_canonical=lambda i: fail(i, NOT_CANONICAL)), relations, b)   # b: still in the entry block

    def either(rec, mixed_fn, fn, name):
        """mixed_fn() for an INTERLEAVED record, else fn(relation) in the record's relation's case."""
        with b.if_else(b.icmp_signed("==", slot(rec, 0), _i64(INTERLEAVED)), likely=False) as (then, otherwise):
            with then:
                mixed_fn()
            with otherwise:
                per_relation(rec, fn, name)

    # phase 1: every batch canonical? (nothing runs before all are)
    def check(i, rec):
        either(rec, lambda: mixed.check(i, rec),
               lambda r: check_part(r, as_ptr(slot(rec, 1)), as_ptr(slot(rec, 2)), i), "check")
    loop(check, "check")

    # phase 2: run them, one after another, each atomic
    def run(i, rec):
        logged = _i64(1) if logged_always else slot(slots, 0)

        def rel_run(r):
            signs, cols = as_ptr(slot(rec, 1)), as_ptr(slot(rec, 2))
            n = b.load(as_ptr(word(signs, layout.dims)), typ=I64)
            ids = {}
            if r.strings:       # encoded before anything of the batch runs (a miss returns)
                need = b.mul(n, _i64(len(r.strings)))
                with b.if_then(b.icmp_signed(">", need, b.load(sids_cap, typ=I64)), likely=False):
                    b.call(free, [b.load(sids, typ=PTR)])
                    b.store(b.call(calloc, [need, _i64(8)]), sids)
                    b.store(need, sids_cap)
                scratch = b.load(sids, typ=PTR)
                for k, j in enumerate(r.strings):
                    out = b.gep(scratch, [b.mul(n, _i64(k))], inbounds=True, source_etype=I64)
                    got = b.call(encode, [as_ptr(slot(rec, 3 + 2 * k)), slot(rec, 4 + 2 * k), n, out])
                    with b.if_then(b.icmp_unsigned("==", b.ptrtoint(got, I64), _i64(0)), likely=False):
                        b.store(_i64(k), miss)
                        fail(i, MISSING)
                    ids[j] = got
            if has_undo:
                b.store(logged, undo_on)
            if not all(r.read):
                ensure_zeros(n)
            call_part(r, n, _i64(0), signs, cols, ids)

        def mixed_run():
            if has_undo:
                b.store(logged, undo_on)
            # one compaction after the piece, not one per run (~4 ns/event for SPREAD's 8 maps)
            b.store(_i64(1), deferred)
            mixed.run(i, rec)
            b.store(_i64(0), deferred)
            ok = b.icmp_signed("==", b.load(site, typ=I64), _i64(-1))
            for g in errors:
                ok = b.and_(ok, b.icmp_signed("==", b.load(g, typ=I64), _i64(-1)))
            with b.if_then(ok):      # at 1/8 zeros: once per piece, and loops scan fewer dead entries
                b.call(compact, [_i64(COMPACT_EIGHTH)])
        either(rec, mixed_run, rel_run, "run")
        failed = b.icmp_signed("!=", b.load(site, typ=I64), _i64(-1))
        for g in errors:
            failed = b.or_(failed, b.icmp_signed("!=", b.load(g, typ=I64), _i64(-1)))
        if has_undo:
            on = b.icmp_unsigned("!=", logged, _i64(0))
            with b.if_then(failed, likely=False):
                with b.if_then(on):
                    b.call(rollback, [])
                fail(i, FAILED)
            with b.if_then(on):
                b.store(_i64(0), undo_on)
                b.call(trim, [])
        else:
            with b.if_then(failed, likely=False):
                fail(i, FAILED)
    loop(run, "run")
    b.ret(_i64(0))

    f = ir.Function(m, ir.FunctionType(VOID, []), "toaster.feed_release")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    b.call(free, [b.load(zeros, typ=PTR)])
    b.store(ir.Constant(PTR, None), zeros)
    b.store(_i64(0), zeros_cap)
    b.call(free, [b.load(sids, typ=PTR)])
    b.store(ir.Constant(PTR, None), sids)
    b.store(_i64(0), sids_cap)
    b.call(m.globals["toaster.strhash_clear"], [])
    b.call(m.globals["toaster.strhash_log_free"], [])
    b.ret_void()

    # the entry: inner, timed when feed.clock is set
    f = ir.Function(m, ir.FunctionType(I64, [I64, PTR]), "toaster.feed")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    ck = b.load(clock, typ=I64)
    timed = f.append_basic_block("timed")
    plain = f.append_basic_block("plain")
    b.cbranch(b.icmp_signed(">=", ck, _i64(0)), timed, plain)
    b.position_at_end(plain)
    b.ret(b.call(inner, list(f.args)))
    b.position_at_end(timed)
    ts = b.alloca(ir.ArrayType(I64, 2))

    def now():
        b.call(gettime, [b.trunc(ck, I32), ts])
        sec = b.load(b.gep(ts, [_i64(0), _i64(0)], inbounds=True, source_etype=ts.allocated_type), typ=I64)
        nsec = b.load(b.gep(ts, [_i64(0), _i64(1)], inbounds=True, source_etype=ts.allocated_type), typ=I64)
        return b.add(b.mul(sec, _i64(1_000_000_000)), nsec)
    t0 = now()
    res = b.call(inner, list(f.args))
    t1 = now()
    b.store(b.add(b.load(ns, typ=I64), b.sub(t1, t0)), ns)
    b.store(b.add(b.load(calls, typ=I64), _i64(1)), calls)
    b.ret(res)
    return str(m)


# ------------------------------------------------------------------------------ the caller
class NativeFeed:
    """The engine's side of toaster.feed: the reused slots array, the relations it takes, and
    the call. run(batches) returns False when some batch is not for this path (nothing ran)."""

    def __init__(self, engine, relations, address_of_global, function_address):
        self.engine = engine
        self.width = record_width(relations)
        self.by_name = {}                       # relation name as given -> FeedRelation or None
        self.relations = {r.process: r for r in relations}
        self.call = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(
            function_address("toaster.feed"))
        values = const_values()
        (ctypes.c_int64 * len(values)).from_address(address_of_global("feed.consts"))[:] = values
        self.clock = ctypes.c_int64.from_address(address_of_global("feed.clock"))
        self.ns = ctypes.c_int64.from_address(address_of_global("feed.ns"))
        self.release = ctypes.CFUNCTYPE(None)(function_address("toaster.feed_release"))
        self._sources: dict = {}        # id(string column) -> StringSource
        self.miss = ctypes.c_int64.from_address(address_of_global("feed.miss"))
        self.miss_row = ctypes.c_int64.from_address(address_of_global("feed.miss_row"))
        self._logged = False
        self._grow(4)

    def _grow(self, records: int) -> None:
        self.capacity = records
        self.slots = (ctypes.c_int64 * (HEADER + self.width * records))()
        self.address = ctypes.addressof(self.slots)

    def relation(self, name):
        """The FeedRelation of a stream relation without NULL columns, else None (cached)."""
        try:
            return self.by_name[name]
        except KeyError:
            pass
        eng = self.engine
        decl = eng.relations.get(name) if isinstance(name, str) else None
        fr = None
        if decl is not None and decl.kind == "stream" and not decl.has_nulls:
            fr = self.relations.get(eng.llvm_module.entry_points.get(decl.name))
        self.by_name[name] = fr
        return fr

    def run(self, batches) -> bool:
        """Feed the batches natively; False when some batch is not for this path (nothing ran).
        A batch holding strings the native hash table lacks returns to Python, which interns
        them and calls again from that batch on."""
        pos, retried, window = 0, -1, WINDOW
        while True:
            rc = self._call(batches, pos)
            if rc == 0:
                return True
            if rc is None or rc & 3 == NOT_CANONICAL:
                if pos == 0:
                    return False
                raise RuntimeError(f"internal error: the native feed refused batch {pos} after running "
                                   "the ones before it")
            kind, i = rc & 3, pos + (rc >> 2)
            if kind == FAILED:
                self.engine._native_failure(self._logged or self.engine._always_logged, i)
            # MISSING: batch i has strings the table lacks (none of it ran)
            window = 2 * window if i == pos else WINDOW    # the same batch again: a wider window
            if not self._intern_strings(batches[i], self.miss.value, self.miss_row.value, window):
                if retried == i:
                    raise RuntimeError("internal error: the native string table misses strings "
                                       "the dictionary holds")
                self.engine._pool.rehash()
                retried = i
            pos = i

    def _call(self, batches, pos: int):
        """Fill the slots for batches[pos:] and call toaster.feed; None when some batch is not
        for this path."""
        if len(batches) - pos > self.capacity:
            self._grow(max(len(batches) - pos, 2 * self.capacity))
        slots, width, pool = self.slots, self.width, self.engine._pool
        keep = []                       # descriptors made for this call: alive until it returns
        k = HEADER
        for b in batches[pos:] if pos else batches:
            if b.__class__ is _Interleaved and len(b.parts) == 1 and len(b.tags) == len(b.parts[0]) \
                    and not b.tags.any():
                b = b.parts[0]      # one relation: its part is the batch (no tag walk)
            if b.__class__ is _Interleaved:
                plan = self._plan(b)
                if plan is None:
                    return None
                keep.append(plan)
                slots[k] = INTERLEAVED
                slots[k + 1] = id(b.tags)
                slots[k + 2] = plan.ctypes.data
                k += width
                continue
            if b.__class__ is not _Batch or not b.checked:
                return None
            fr = self.by_name.get(b.relation, False)
            if fr is False:
                fr = self.relation(b.relation)
            if fr is None:
                return None
            slots[k] = fr.index
            slots[k + 1] = id(b.signs)
            slots[k + 2] = id(b.columns)
            s = k + 3
            for j in fr.strings:
                origin = b.origin
                if origin is not None:
                    col, start = origin[0].columns[j], origin[1]
                else:
                    col, start = b.columns[j], 0
                src = self._sources.get(id(col))
                if src is None or src.col is not col:
                    src = self._source(col)
                n = len(b.signs)
                if src.rows < start + n and src.address is not None:
                    src.extend(start + n)
                if src.address is None or (start + n > src.rows if origin is not None else n != src.total):
                    found = pool.batch_ids(b, j)        # not a plain string column: ids from the pool
                    if found is None:
                        return None
                    desc = np.array([0, found[0].ctypes.data + 8 * found[1]], np.int64)
                    keep.append(found[0])
                    keep.append(desc)
                    slots[s] = desc.ctypes.data
                    slots[s + 1] = 0
                else:
                    slots[s] = src.address
                    slots[s + 1] = start
                s += 2
            k += width
        if pool._pending:
            pool.sync()
        logged = self._logged = pool._fallible and pool.may_fail()
        slots[0] = 1 if logged else 0
        return self.call(len(batches) - pos, self.address)

    def _plan(self, mixed) -> np.ndarray | None:
        """An Interleaved's plan [parts, (relation index, id(signs), id(columns)) per part], or
        None when some part is not for this path (not reader-checked, STRING columns read)."""
        parts = mixed.parts
        if not 0 < len(parts) <= MAX_PARTS or len(mixed.tags) == 0:
            return None
        plan = [len(parts)]
        for p in parts:
            if p.__class__ is not _Batch or not p.checked:
                return None
            fr = self.by_name.get(p.relation, False)
            if fr is False:
                fr = self.relation(p.relation)
            if fr is None or fr.strings:
                return None
            plan += (fr.index, id(p.signs), id(p.columns))
        return np.array(plan, np.int64)

    def _source(self, col) -> "StringSource":
        src = self._sources[id(col)] = StringSource(col)
        if len(self._sources) > SOURCES:
            del self._sources[next(iter(self._sources))]       # the oldest
        return src

    def _intern_strings(self, b, k: int, row: int, window: int) -> int:
        """Intern the strings of rows [row, row + window) of batch b's k-th STRING column read
        (row: the first one native code did not find) that the dictionary lacks: Arrow's unique
        over the window, then Python once per new distinct string; returns how many were new.
        The caller doubles the window while the same batch misses again (few calls even when
        every row holds a new string; one when a column holds a few distinct strings)."""
        fr = self.relation(b.relation)
        pool = self.engine._pool
        j, n = fr.strings[k], len(b.signs)
        origin = b.origin
        start = origin[1] if origin is not None else 0
        col = (origin[0].columns[j] if origin is not None else b.columns[j]).slice(start + row, min(window, n - row))
        known = pool.ids
        new = sorted(s for s in pc.unique(col).to_pylist() if s not in known)   # sorted: deterministic ids
        pool.intern_new(new)
        pool.sync()
        return len(new)


WINDOW = 4096       # rows whose strings one MISSING return interns at first

SOURCES = 16        # string columns whose descriptors NativeFeed keeps


from toaster.runtime.batch import Batch as _Batch  # noqa: E402
from toaster.runtime.interleaved import Interleaved as _Interleaved  # noqa: E402
