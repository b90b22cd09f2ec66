"""toaster.feed's record for an `Interleaved` (toaster/runtime/interleaved.py): events of several
relations in stream order, walked natively so that a stream alternating every ~2 events costs
no Python and no batch setup per run.

Record: INTERLEAVED, id(tags), address of an int64 plan [parts, then per part: relation index,
id(signs), id(columns)]. Checked first (tags int8 in 0..parts-1, each part canonical with as
many rows as tags naming it; parts with STRING columns read are not for this path), then run as
ONE batch: each run of equal tags is one process_<REL>(len, rows from the part's cursor) call.
"""
from __future__ import annotations

from llvmlite import ir

from toaster.types import BOOL, STRING
from toaster.backends.llvm.hashmap import I8, I64
from toaster.backends.llvm.string_hash import emit_counted_loop

INTERLEAVED = -1        # the record's relation slot
MAX_PARTS = 16          # parts one Interleaved may have on this path (cursors live on the stack)


def _i64(v):
    return ir.Constant(I64, v)


class InterleavedEmitter:
    """Emits the check and the run of an INTERLEAVED record inside feed.inner. `h` carries
    build_feed_ir's helpers (b, inner, word, slot, as_ptr, require, require_array, check_part,
    call_part, ensure_zeros)."""

    def __init__(self, h, relations, entry_builder: ir.IRBuilder):
        self.h = h
        self.relations = [r for r in relations if not r.strings]
        # rows per part (check), then each part's next row (run)
        self.counts = entry_builder.alloca(I64, size=_i64(MAX_PARTS), name="ix.counts")
        self.k = entry_builder.alloca(I64, name="ix.k")
        self.e = entry_builder.alloca(I64, name="ix.e")

    def _cell(self, t):
        b = self.h.b
        return b.gep(self.counts, [t], inbounds=True, source_etype=I64)

    def _plan(self, plan, t, k):        # plan[1 + 3t + k]
        b = self.h.b
        return b.load(b.gep(plan, [b.add(_i64(1 + k), b.mul(t, _i64(3)))], inbounds=True, source_etype=I64), typ=I64)

    def _tag(self, data, k):
        b = self.h.b
        return b.zext(b.load(b.gep(data, [k], inbounds=True, source_etype=I8), typ=I8), I64)

    def _switch(self, rel, fn, name, i):
        """fn(r) in relation r's case; an index of no relation here (or one with STRING columns
        read) is not canonical."""
        h = self.h
        b = h.b
        after = h.inner.append_basic_block(f"{name}.next")
        bad = h.inner.append_basic_block(f"{name}.other")
        sw = b.switch(rel, bad)
        for r in self.relations:
            case = h.inner.append_basic_block(f"{name}.{r.process}")
            sw.add_case(_i64(r.index), case)
            b.position_at_end(case)
            fn(r)
            b.branch(after)
        b.position_at_end(bad)
        h.fail_not_canonical(i)
        b.position_at_end(after)

    def check(self, i, rec):
        h = self.h
        b = h.b
        tags = h.as_ptr(h.slot(rec, 1))
        n = h.require_array(tags, "int8", i)
        h.require(b.icmp_signed(">", n, _i64(0)), i)
        data = h.as_ptr(h.word(tags, h.layout.data))
        plan = h.as_ptr(h.slot(rec, 2))
        parts = b.load(plan, typ=I64)
        h.require(b.and_(b.icmp_signed(">", parts, _i64(0)), b.icmp_signed("<=", parts, _i64(MAX_PARTS))), i)
        # the tags' maximum, then each part's count: branch-free reductions over the tags (they
        # vectorize; a per-event count in memory cost ~5 ns/event)
        top = self._reduce(data, n, "ixc.max", lambda b, tag, acc: b.select(b.icmp_unsigned(">", tag, acc), tag, acc))
        h.require(b.icmp_unsigned("<", top, parts), i)

        def part(b, t):
            signs, cols = h.as_ptr(self._plan(plan, t, 1)), h.as_ptr(self._plan(plan, t, 2))
            count = self._reduce(data, n, "ixc.count", lambda b, tag, acc: b.add(acc, b.zext(
                b.icmp_unsigned("==", tag, t), I64)))

            def one(r):
                rows = h.check_part(r, signs, cols, i)
                h.require(b.icmp_signed("==", rows, count), i)
            self._switch(self._plan(plan, t, 0), one, "ixc.part", i)
        emit_counted_loop(h.inner, b, parts, "ixc.parts", part)

    def _reduce(self, data, n, name, step):
        """acc = step(tag, acc) over the tags from 0; returns acc after the loop."""
        h = self.h
        b = h.b
        pre = b.block
        head, body, done = (h.inner.append_basic_block(f"{name}.{x}") for x in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        k, acc = b.phi(I64), b.phi(I64)
        k.add_incoming(_i64(0), pre)
        acc.add_incoming(_i64(0), pre)
        b.cbranch(b.icmp_signed("<", k, n), body, done)
        b.position_at_end(body)
        nxt = step(b, self._tag(data, k), acc)
        k.add_incoming(b.add(k, _i64(1)), b.block)
        acc.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)
        return acc

    def run(self, i, rec):
        h = self.h
        b = h.b
        tags = h.as_ptr(h.slot(rec, 1))
        n = b.load(h.as_ptr(h.word(tags, h.layout.dims)), typ=I64)
        data = h.as_ptr(h.word(tags, h.layout.data))
        plan = h.as_ptr(h.slot(rec, 2))
        parts = b.load(plan, typ=I64)
        h.ensure_zeros(n)
        emit_counted_loop(h.inner, b, parts, "ixr.zero", lambda b, t: b.store(_i64(0), self._cell(t)))
        b.store(_i64(0), self.k)
        head = h.inner.append_basic_block("ixr.head")
        body = h.inner.append_basic_block("ixr.body")
        done = h.inner.append_basic_block("ixr.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.load(self.k, typ=I64)
        b.cbranch(b.icmp_signed("<", k, n), body, done)
        b.position_at_end(body)
        t = self._tag(data, k)
        # the run: e = first event after k with another tag
        b.store(b.add(k, _i64(1)), self.e)
        scan = h.inner.append_basic_block("ixr.scan")
        same = h.inner.append_basic_block("ixr.same")
        step = h.inner.append_basic_block("ixr.step")
        ended = h.inner.append_basic_block("ixr.ended")
        b.branch(scan)
        b.position_at_end(scan)
        e = b.load(self.e, typ=I64)
        b.cbranch(b.icmp_signed("<", e, n), same, ended)
        b.position_at_end(same)
        b.cbranch(b.icmp_unsigned("==", self._tag(data, e), t), step, ended)
        b.position_at_end(step)
        b.store(b.add(e, _i64(1)), self.e)
        b.branch(scan)
        b.position_at_end(ended)
        e = b.load(self.e, typ=I64)
        length = b.sub(e, k)
        cell = self._cell(t)
        row = b.load(cell, typ=I64)
        b.store(b.add(row, length), cell)
        signs, cols = h.as_ptr(self._plan(plan, t, 1)), h.as_ptr(self._plan(plan, t, 2))
        self._switch(self._plan(plan, t, 0), lambda r: h.call_part(r, length, row, signs, cols), "ixr.part", i)
        b.store(e, self.k)
        b.branch(head)
        b.position_at_end(done)


def item_size(t) -> int:
    """Bytes per row of a column of type t as toaster.feed takes it (numpy's canonical dtypes)."""
    assert t != STRING
    return 1 if t == BOOL else 8
