"""Bulk accessors for programs whose maps are driven from outside, batch by batch (the Spark
engine's native partition programs, toaster/backends/spark/native*.py). Generated only when
`generate_llvm(prog, bulk_access=True)`: the llvm engine's own modules do not have them.

Per map (exported):
  <map>.getmany(i64 n, i64* keys, <val>* out)   out[i] = the value at key row i (0 when absent)
  <map>.setmany(i64 n, i64* keys, <val>* vals)  set the value at each key row (0 deletes: it is
                                                 reclaimed by the next compaction)
  <map>.addmany(i64 n, i64* keys, <val>* vals)  add to the value at each key row
And the state swap (build_state_swap): toaster.state_words / state_save / state_load.
And, with the undo log (undo.py), the keys a batch wrote, read from the log's records:
  toaster.undo_words() -> i64                    words in the log now (a bound on the keys)
  toaster.touched(i64 tag, i64* out) -> i64      copy the K key words of every record of the
                                                 map numbered `tag` to out (row-major, newest
                                                 first, repeats included); returns the rows
Rows are K int64 words each (keys as the generated code encodes them: see codegen.encode_key).
"""
from __future__ import annotations

from llvmlite import ir

from toaster.backends.llvm.hashmap import I64, PTR, VOID, NativeMap, _func, i64


def build_map_bulk(m: NativeMap) -> None:
    """<map>.getmany, <map>.setmany and <map>.addmany (loops over the map's own get / set / add;
    addmany is checked integer addition like the generated code's)."""
    for op in ("getmany", "setmany", "addmany"):
        f = _func(m.module, f"{m.name}.{op}", VOID, [I64, PTR, PTR], internal=False)
        n, keys, vals = f.args
        b = ir.IRBuilder(f.append_basic_block("entry"))

        def row(b, e, op=op, keys=keys, vals=vals):
            key = [m.key_at(b, keys, e, j) for j in range(m.K)]
            vp = b.gep(vals, [e], inbounds=True, source_etype=m.vty)
            if op == "getmany":
                b.store(m.get(b, key), vp)
            elif op == "setmany":
                m.set(b, key, b.load(vp, typ=m.vty))
            else:
                m.add(b, key, b.load(vp, typ=m.vty))
        m._count_loop(f, b, n, row).ret_void()


def build_touched(module: ir.Module, undo, maps) -> None:
    """toaster.undo_words() and toaster.touched(tag, out) over the undo log's records
    (tag, old value, K keys, record length), walked newest first like toaster.rollback."""
    f = ir.Function(module, ir.FunctionType(I64, []), "toaster.undo_words")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    b.ret(b.load(undo.len, typ=I64))

    f = ir.Function(module, ir.FunctionType(I64, [I64, PTR]), "toaster.touched")
    want, out = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    head = f.append_basic_block("head")
    body = f.append_basic_block("body")
    done = f.append_basic_block("done")
    pre = b.block
    end = b.load(undo.len, typ=I64)
    b.branch(head)
    hb = ir.IRBuilder(head)
    pos = hb.phi(I64, "pos")
    rows = hb.phi(I64, "rows")
    pos.add_incoming(end, pre)
    rows.add_incoming(i64(0), pre)
    hb.cbranch(hb.icmp_signed(">", pos, i64(0)), body, done)
    rb = ir.IRBuilder(body)
    buf = rb.load(undo.buf, typ=PTR)
    size = rb.load(rb.gep(buf, [rb.sub(pos, i64(1))], inbounds=True, source_etype=I64), typ=I64)
    start = rb.sub(pos, size)
    rec = rb.gep(buf, [start], inbounds=True, source_etype=I64)
    tag = rb.load(rec, typ=I64)
    # K of the record's map: its length minus (tag, old, length)
    K = rb.sub(size, i64(3))
    match = rb.icmp_unsigned("==", tag, want)
    copy = f.append_basic_block("copy")
    nxt = f.append_basic_block("next")
    before = rb.block
    rb.cbranch(match, copy, nxt)
    cb = ir.IRBuilder(copy)
    dst = cb.gep(out, [cb.mul(rows, K)], inbounds=True, source_etype=I64)
    src = cb.gep(rec, [i64(2)], inbounds=True, source_etype=I64)
    cb.call(_memcpy(module), [dst, src, cb.mul(K, i64(8)), ir.Constant(ir.IntType(1), 0)])
    cb.branch(nxt)
    nb = ir.IRBuilder(nxt)
    new_rows = nb.phi(I64)
    new_rows.add_incoming(rows, before)
    new_rows.add_incoming(_inc(copy, rows), copy)
    pos.add_incoming(start, nxt)
    rows.add_incoming(new_rows, nxt)
    nb.branch(head)
    ir.IRBuilder(done).ret(rows)


def _inc(block, rows):
    """rows + 1, computed at the end of `block` (before its terminator)."""
    b = ir.IRBuilder(block)
    b.position_before(block.terminator)
    return b.add(rows, i64(1))


def _memcpy(module: ir.Module):
    name = "llvm.memcpy.p0.p0.i64"
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64, ir.IntType(1)]), name)


def _state_globals(m: NativeMap) -> list:
    # the undo stamps (hashmap.py) belong to the set of maps too: an entry array each
    stamp = getattr(m, "g_stamp", None) if m.K == 0 else m.g_stamps
    stamps = [] if stamp is None else [(stamp, I64 if m.K == 0 else PTR)]
    if m.K == 0:
        return [(m.scalar, m.vty)] + stamps
    gs = [(m.g_cap, I64), (m.g_count, I64), (m.g_zeros, I64), (m.g_slots, PTR), (m.g_keys, PTR),
          (m.g_vals, PTR)]
    return gs + stamps + [(g, PTR) for g in m.g_ix_slots + m.g_ix_next]


def build_state_swap(module: ir.Module, maps) -> None:
    """toaster.state_words() -> i64, toaster.state_save(i64* out), toaster.state_load(i64* src):
    every map's globals (capacities, counts, table pointers, scalars) as words, so one JIT'd
    module can hold several independent sets of maps (one per partition) and switch between
    them in O(maps): save the current set, load (or `toaster.init`) another."""
    words = [(g, ty) for m in maps for g, ty in _state_globals(m)]
    f = ir.Function(module, ir.FunctionType(I64, []), "toaster.state_words")
    ir.IRBuilder(f.append_basic_block()).ret(i64(len(words)))
    for name, save in (("toaster.state_save", True), ("toaster.state_load", False)):
        f = ir.Function(module, ir.FunctionType(VOID, [PTR]), name)
        b = ir.IRBuilder(f.append_basic_block())
        for j, (g, ty) in enumerate(words):
            slot = b.gep(f.args[0], [i64(j)], inbounds=True, source_etype=I64)
            if save:
                v = b.load(g, typ=ty)
                w = b.ptrtoint(v, I64) if ty == PTR else b.bitcast(v, I64) if ty != I64 else v
                b.store(w, slot)
            else:
                w = b.load(slot, typ=I64)
                v = b.inttoptr(w, PTR) if ty == PTR else b.bitcast(w, ty) if ty != I64 else w
                b.store(v, g)
        b.ret_void()
