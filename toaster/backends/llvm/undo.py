"""The native undo log that makes a batch atomic when a trigger can fail at run time.

A program gets one when it has a fallible string table (cast_date of a string, ...) or checked
integer arithmetic (overflow.py). The engine switches it on (`undo.on` = 1) for every batch of a
program with checked integers (an overflow is known only once it happened), else only for a
batch in which some live string has an invalid table entry; while it is off a map write pays
one load and branch.

While it is on, every map write first appends a record of the key's previous value:
    tag (the map's number), the old value (an i64, or a double's bits), then the K key components.
A MapClear of a view map records every nonzero entry it drops. `toaster.rollback()` replays the
records backwards with `set` (logging off): the maps then hold exactly the values they held
before the batch (entries the batch created are left with value 0, which every reader skips and
compaction reclaims). Records are keyed, not entry numbers, so growth, clears and compaction
cannot invalidate them.

A batch is atomic as a whole, so a map entry needs its value before the batch only: a logged
entry carries a stamp, the log's `undo.epoch` when it was recorded (`emit_record_once`), and
later writes in the same batch add no record (a tuple-mode batch of 1,000 events wrote ~6
records per event into 10 per-broker entries). The epoch moves on whenever the log is emptied
(trim, rollback), so stamps of an earlier batch never match; entries written while the log is
off get stamp 0, which no epoch is.
"""
from __future__ import annotations

from llvmlite import ir

I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
TRIM_WORDS = 1 << 16      # a log larger than this is freed after a batch that used < 1/8 of it


def _i64(v):
    return ir.Constant(I64, v)


class UndoLog:
    def __init__(self, module: ir.Module, runtime):
        self.module, self.rt = module, runtime
        self.on = self._global("undo.on", I64, 0, internal=False)   # the engine writes it
        self.buf = self._global("undo.buf", PTR, None)
        self.len = self._global("undo.len", I64, 0)
        self.cap = self._global("undo.cap", I64, 0)
        self.epoch = self._global("undo.epoch", I64, 1)      # stamps of entries logged this batch
        self._build_reserve()

    def _global(self, name, ty, init, internal=True):
        g = ir.GlobalVariable(self.module, ty, name)
        if internal:
            g.linkage = "internal"
        g.initializer = ir.Constant(ty, init)
        return g

    def _build_reserve(self):
        """undo.reserve(words) -> pointer to `words` fresh words at the end of the log."""
        f = self.reserve = ir.Function(self.module, ir.FunctionType(PTR, [I64]), "undo.reserve")
        f.linkage = "internal"
        b = ir.IRBuilder(f.append_basic_block("entry"))
        n = b.load(self.len, typ=I64)
        need = b.add(n, f.args[0])
        grow = f.append_basic_block("grow")
        done = f.append_basic_block("done")
        b.cbranch(b.icmp_unsigned(">", need, b.load(self.cap, typ=I64)), grow, done)
        g = ir.IRBuilder(grow)
        cap = g.add(g.mul(need, _i64(2)), _i64(1024))
        g.store(g.call(self.rt.realloc, [g.load(self.buf, typ=PTR), g.mul(cap, _i64(8))]), self.buf)
        g.store(cap, self.cap)
        g.branch(done)
        b = ir.IRBuilder(done)
        b.store(need, self.len)
        b.ret(b.gep(b.load(self.buf, typ=PTR), [n], inbounds=True, source_etype=I64))

    def emit_record(self, b: ir.IRBuilder, tag: int, old_bits, keys) -> None:
        """Append (tag, old, keys..., record length) when the log is on; the trailing length
        lets rollback walk the records backwards."""
        with b.if_then(b.icmp_unsigned("!=", b.load(self.on, typ=I64), _i64(0)), likely=False):
            words = [_i64(tag), old_bits] + list(keys)
            words.append(_i64(len(words) + 1))
            p = b.call(self.reserve, [_i64(len(words))])
            for j, w in enumerate(words):
                b.store(w, b.gep(p, [_i64(j)], inbounds=True, source_etype=I64))

    def emit_record_once(self, b: ir.IRBuilder, tag: int, old_bits, keys, stamp_ptr) -> None:
        """emit_record, only when the entry whose stamp is at stamp_ptr was not recorded since the
        log was last emptied (its first write in this batch)."""
        on = b.icmp_unsigned("!=", b.load(self.on, typ=I64), _i64(0))
        with b.if_then(on, likely=False):
            epoch = b.load(self.epoch, typ=I64)
            with b.if_then(b.icmp_unsigned("!=", b.load(stamp_ptr, typ=I64), epoch)):
                b.store(epoch, stamp_ptr)
                words = [_i64(tag), old_bits] + list(keys)
                words.append(_i64(len(words) + 1))
                p = b.call(self.reserve, [_i64(len(words))])
                for j, w in enumerate(words):
                    b.store(w, b.gep(p, [_i64(j)], inbounds=True, source_etype=I64))

    def emit_record_once_via(self, b: ir.IRBuilder, stamp_ptr, record_fn, args) -> None:
        """emit_record_once with the record written by record_fn(args) out of line (build_record):
        the code at every write site is the two checks only."""
        on = b.icmp_unsigned("!=", b.load(self.on, typ=I64), _i64(0))
        with b.if_then(on, likely=False):
            epoch = b.load(self.epoch, typ=I64)
            with b.if_then(b.icmp_unsigned("!=", b.load(stamp_ptr, typ=I64), epoch), likely=False):
                b.call(record_fn, args)

    def build_record(self, name: str, tag: int, nkeys: int, stamps_global) -> ir.Function:
        """name(e, old_bits, keys...): stamp entry e with the epoch and append its record."""
        f = ir.Function(self.module, ir.FunctionType(VOID, [I64] * (2 + nkeys)), name)
        f.linkage = "internal"
        f.attributes.add("noinline")
        f.attributes.add("cold")
        b = ir.IRBuilder(f.append_basic_block("entry"))
        e, old, keys = f.args[0], f.args[1], list(f.args[2:])
        stamps = b.load(stamps_global, typ=PTR)
        b.store(b.load(self.epoch, typ=I64), b.gep(stamps, [e], inbounds=True, source_etype=I64))
        words = [_i64(tag), old] + keys
        words.append(_i64(len(words) + 1))
        p = b.call(self.reserve, [_i64(len(words))])
        for j, w in enumerate(words):
            b.store(w, b.gep(p, [_i64(j)], inbounds=True, source_etype=I64))
        b.ret_void()
        return f

    def current_stamp(self, b: ir.IRBuilder):
        """The stamp a new entry gets: the epoch while the log is on (its insert was recorded), else 0."""
        on = b.icmp_unsigned("!=", b.load(self.on, typ=I64), _i64(0))
        return b.select(on, b.load(self.epoch, typ=I64), _i64(0))

    def _next_epoch(self, b: ir.IRBuilder) -> None:
        b.store(b.add(b.load(self.epoch, typ=I64), _i64(1)), self.epoch)

    def build_exports(self, maps, after_rollback=None) -> None:
        """toaster.rollback() (undo every record, newest first, then empty the log) and
        toaster.undo_trim() (empty the log, freeing a large buffer this batch barely used).
        after_rollback(builder, function) emits code run once the records are undone (the range
        indexes, which keep no records, are rebuilt from their restored maps there)."""
        f = ir.Function(self.module, ir.FunctionType(VOID, []), "toaster.rollback")
        b = ir.IRBuilder(f.append_basic_block("entry"))
        b.store(_i64(0), self.on)          # restoring writes must not log
        head = f.append_basic_block("head")
        body = f.append_basic_block("body")
        done = f.append_basic_block("done")
        pre = b.block
        end = b.load(self.len, typ=I64)
        b.branch(head)
        hb = ir.IRBuilder(head)
        pos = hb.phi(I64, "pos")            # one past the end of the newest record not undone yet
        pos.add_incoming(end, pre)
        hb.cbranch(hb.icmp_signed(">", pos, _i64(0)), body, done)
        rb = ir.IRBuilder(body)
        buf = rb.load(self.buf, typ=PTR)
        size = rb.load(rb.gep(buf, [rb.sub(pos, _i64(1))], inbounds=True, source_etype=I64), typ=I64)
        start = rb.sub(pos, size)
        rec = rb.gep(buf, [start], inbounds=True, source_etype=I64)
        tag = rb.load(rec, typ=I64)
        old = rb.load(rb.gep(rec, [_i64(1)], inbounds=True, source_etype=I64), typ=I64)
        for m in maps:
            if m.undo_tag is None:
                continue
            with rb.if_then(rb.icmp_unsigned("==", tag, _i64(m.undo_tag))):
                keys = [rb.load(rb.gep(rec, [_i64(2 + k)], inbounds=True, source_etype=I64), typ=I64)
                        for k in range(m.K)]
                m.restore(rb, keys, old)
        pos.add_incoming(start, rb.block)
        rb.branch(head)
        b = ir.IRBuilder(done)
        b.store(_i64(0), self.len)
        self._next_epoch(b)
        if after_rollback is not None:
            b = after_rollback(b, f) or b
        b.ret_void()

        f = ir.Function(self.module, ir.FunctionType(VOID, []), "toaster.undo_trim")
        b = ir.IRBuilder(f.append_basic_block("entry"))
        used = b.load(self.len, typ=I64)
        b.store(_i64(0), self.len)
        self._next_epoch(b)
        # kept while batches use a good part of it (every batch logs when integers are checked)
        cap = b.load(self.cap, typ=I64)
        large = b.icmp_unsigned(">", cap, _i64(TRIM_WORDS))
        mostly_unused = b.icmp_unsigned(">", cap, b.mul(used, _i64(8)))
        with b.if_then(b.and_(large, mostly_unused)):
            b.call(self.rt.free, [b.load(self.buf, typ=PTR)])
            b.store(ir.Constant(PTR, None), self.buf)
            b.store(_i64(0), self.cap)
        b.ret_void()
