"""Lowering imp -> LLVM IR (pass `imp_to_llvm`): one function per ImpTrigger, one native batch
entry point per relation, native hash maps from hashmap.py.

Value representation in native code:  INT, DATE -> i64;  FLOAT -> double;  BOOL -> i1;
STRING -> i64 dictionary id (ids of string literals are assigned here, in order of first
appearance; the engine extends the same dictionary with the strings of its input).
String functions with literal other arguments and string order are loads from native tables
indexed by id, which the engine fills (strings.py): `strtab.<n>.<function>` (and `.ok`, `.error`
when the function can fail on some strings), `strtab.rank`.
Map key components are all stored as i64 (FLOAT bit-cast after turning -0.0 into 0.0, BOOL 0/1).

Entry points (external symbols):
  process_<REL>(i64 n, i8* signs, <one pointer per column>)   columns: i64[] for INT/DATE/STRING,
      double[] for FLOAT, i8[] for BOOL. Runs the insert/delete trigger per row, or, per chunk
      of DELTA_CHUNK_ROWS rows, fills DELTA_<REL>, runs the batch trigger and clears DELTA_<REL>.
  toaster.init() / toaster.destroy()   allocate / free every map
  toaster.compact(i64 force)   reclaim zero-valued entries of every map (see hashmap.py)
  <map>.count() / <map>.keys() / <map>.vals() / <map>.load(n, keys, vals)   (see hashmap.py)
  toaster.rollback() / toaster.undo_trim(), global undo.on   only in programs with a fallible
      string table or checked integer arithmetic: the undo log that keeps a failing batch atomic
      (undo.py)
  global overflow.site   -1, or the number of the map whose integer value overflowed (overflow.py)

A relation whose delete trigger is its insert trigger negated (imperative/signed.py) gets one
signed trigger, called per row with the row's sign (+1 / -1) instead of a branch on it.

Integer `+ - *` on values and integer map additions are checked (overflow.py).
process_<REL> ends by compacting the maps (unless a fallible table recorded an error or an
integer overflowed: the engine then rolls the batch back, and the undo records must still find
the entries they name; or unless global compact.deferred is set: the Interleaved feed runs a
piece as one process_<REL> call per run and compacts once after them, feed.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite import ir

from toaster.imperative.ir import ImpProgram, MapClear, delta_map_name
from toaster.imperative.signed import signed_trigger
from toaster.passes import pass_
from toaster.types import Type, FLOAT, DATE, STRING, BOOL, date_to_int
from toaster.backends.llvm.hashmap import NativeMap, Runtime, I1, I8, I64, F64, PTR, VOID, i64
from toaster.backends.llvm.strings import StringTable, is_total, RANK, RANK_SYMBOL
from toaster.backends.llvm.natives import register_libm_symbols
from toaster.backends.llvm.undo import UndoLog
from toaster.backends.llvm.range_index import emit_index_rebuild, install_masks, rebuilt_indexes
from toaster.backends.llvm.overflow import OverflowFlag
from toaster.m3.batch_delta import is_delta_map_name
# the per-trigger half; repr_type/convert/encode_key/decode_key stay importable from here
from toaster.backends.llvm.trigger_gen import _TriggerGen, repr_type, convert, encode_key, decode_key  # noqa: F401


# rows of a batch that fill DELTA_<REL> at a time (process_<REL>): its entries (K + 1 words) and
# slots stay within L2 for a relation of a few columns
DELTA_CHUNK_ROWS = 1024


def _clears_a_view(node, prog) -> bool:
    """Whether an imperative statement (tree) clears a view map other than a batch's
    pre-aggregated delta maps (which every batch refills)."""
    if isinstance(node, MapClear):
        spec = next((m for m in prog.maps if m.name == node.map), None)
        return spec is not None and spec.kind == "view" and \
            not is_delta_map_name(node.map, [r.name for r in prog.relations])
    if isinstance(node, (tuple, list)):
        return any(_clears_a_view(x, prog) for x in node)
    if hasattr(node, "__dataclass_fields__"):
        return any(_clears_a_view(getattr(node, f), prog) for f in node.__dataclass_fields__)
    return False


@dataclass(frozen=True)
class LLVMModule:
    """The `llvm` stage: LLVM IR text plus what the engine needs to drive it."""
    program: ImpProgram
    ir_text: str
    strings: tuple                                       # string literals, by dictionary id
    entry_points: dict = field(hash=False, compare=False)  # relation -> process_<REL>
    string_tables: tuple = ()                            # StringTable, for the engine to fill
    has_undo_log: bool = False                           # toaster.rollback and undo.on exist
    overflow_sites: tuple = ()                           # map name per value of `overflow.site`

    def __str__(self) -> str:
        return self.ir_text




class _ModuleGen:
    def __init__(self, prog: ImpProgram, with_undo: bool = False, bulk_access: bool = False):
        self.prog = prog
        self.module = ir.Module(name="toaster")
        self.module.triple = llvm.get_process_triple()
        self.rt = Runtime(self.module)
        self.strings: dict[str, int] = {}
        self.string_tables: dict[tuple, StringTable] = {}
        self.undo = UndoLog(self.module, self.rt) if with_undo else None
        self.overflow = OverflowFlag(self.module)
        # a batch's pre-aggregated delta maps are scratch, refilled by every batch of their
        # relation before it reads them: a rolled-back batch need not restore them
        # range indexes (m3_range_index) keep no records either: toaster.rollback rebuilds them
        self.rix_rebuilt = {} if bulk_access else rebuilt_indexes(prog)
        self.maps = {spec.name: NativeMap(self.module, self.rt, spec,
                                          None if is_delta_map_name(spec.name, [r.name for r in prog.relations])
                                          or spec.name in self.rix_rebuilt else self.undo,
                                          tag, self.overflow)
                     for tag, spec in enumerate(prog.maps)}
        install_masks(self.module, self.maps, self.rix_rebuilt, prog)     # range indexes keep their used levels
        self.trigger_fns = []
        for t in prog.triggers:
            self.trigger_fns.append((t, self._trigger_function(t)))
        self.signed_fns = self._signed_triggers()
        self.entry_points = {r.name: self.process(r) for r in prog.relations}
        self.lifecycle()
        if self.undo is not None:
            self.undo.build_exports(list(self.maps.values()),
                                    lambda b, f: emit_index_rebuild(b, f, self.maps, self.rix_rebuilt))
        if bulk_access:          # maps driven from outside (the Spark engine's partition programs)
            from toaster.backends.llvm.bulk import build_map_bulk, build_state_swap, build_touched
            for m in self.maps.values():
                build_map_bulk(m)
            build_touched(self.module, self.undo, list(self.maps.values()))
            build_state_swap(self.module, list(self.maps.values()))

    def _trigger_function(self, t) -> ir.Function:
        """trigger.<name>: an internal function of the trigger's parameters running its body."""
        fn = ir.Function(self.module, ir.FunctionType(VOID, [repr_type(p.type) for p in t.params]),
                         f"trigger.{t.name}")
        fn.linkage = "internal"
        tg = _TriggerGen(self, fn, t.params)
        tg.body(t.body)
        tg.finish()
        return fn

    def _signed_triggers(self) -> dict:
        """relation -> (trigger, function) of its signed trigger (imperative/signed.py), where its
        delete trigger is its insert trigger negated: process_<REL> then calls it per row with
        the row's sign instead of branching on the sign."""
        out = {}
        for rel in self.prog.relations:
            ins = [t for t in self.prog.triggers if t.event.relation == rel.name and t.event.kind == "insert"]
            dele = [t for t in self.prog.triggers if t.event.relation == rel.name and t.event.kind == "delete"]
            st = signed_trigger(ins[0], dele[0], self.prog) if len(ins) == len(dele) == 1 else None
            if st is None:
                continue
            out[rel.name] = (st, self._trigger_function(st))
        return out

    def fallible(self) -> bool:
        """A trigger can fail at run time: a fallible string table, or checked integer arithmetic."""
        return bool(self.overflow.sites) or any(not t.total for t in self.string_tables.values())

    def compact_deferred(self):
        try:
            return self.module.get_global("compact.deferred")
        except KeyError:
            g = ir.GlobalVariable(self.module, I64, "compact.deferred")
            g.initializer = i64(0)
            return g

    def emit_compaction(self, b, force):
        for m in self.maps.values():
            if m.K > 0 and m.spec.kind != "delta":
                b.call(m.compact_fn, [force])

    def map(self, name) -> NativeMap:
        try:
            return self.maps[name]
        except KeyError:
            raise ValueError(f"imp: unknown map {name!r}") from None

    def string_table(self, function: str, args: tuple, position: int, t: Type) -> StringTable:
        """The table of function(args with a string at position), declared on first use."""
        key = (function, args, position, t)
        table = self.string_tables.get(key)
        if table is None:
            symbol = RANK_SYMBOL if function == RANK else f"strtab.{len(self.string_tables)}.{function}"
            total = function == RANK or is_total(function, args, position)
            table = self.string_tables[key] = StringTable(symbol, function, args, position, t, total)
            # external linkage: the engine re-points them, so the optimizer must not assume null
            for name, ty, init in ((symbol, PTR, None),) + (() if total else (
                    (symbol + ".ok", PTR, None), (symbol + ".error", I64, -1))):
                g = ir.GlobalVariable(self.module, ty, name)
                g.initializer = ir.Constant(ty, init)
        return table

    def literal(self, v, t: Type):
        if t == STRING:
            return i64(self.strings.setdefault(v, len(self.strings)))
        if t == FLOAT:
            return ir.Constant(F64, float(v))
        if t == BOOL:
            return ir.Constant(I1, int(bool(v)))
        if t == DATE and isinstance(v, str):
            v = date_to_int(v)
        return i64(int(v))

    def process(self, rel):
        """process_<REL>(n, signs, columns...): the one native call per input batch."""
        types = rel.types
        col_ty = {FLOAT: F64, BOOL: I8}
        fn = ir.Function(self.module, ir.FunctionType(VOID, [I64, PTR] + [PTR] * len(types)), f"process_{rel.name}")
        n, signs, cols = fn.args[0], fn.args[1], fn.args[2:]
        per_row = [(t, f) for t, f in self.trigger_fns
                   if t.event.relation == rel.name and t.event.kind in ("insert", "delete")]
        batch = [(t, f) for t, f in self.trigger_fns if t.event.relation == rel.name and t.event.kind == "batch"]
        # a trigger that re-evaluates a view (clears it: `:=`, the rep / naive strategies) would
        # do so once per chunk: such a relation's batch runs whole
        chunk = DELTA_CHUNK_ROWS if not any(_clears_a_view(t.body, self.prog) for t, _ in batch) else None
        delta = self.maps.get(delta_map_name(rel.name)) if batch else None
        entry = fn.append_basic_block("entry")
        b = ir.IRBuilder(entry)
        ctr = b.alloca(I64, name="i")

        def row_loop(body, start=i64(0), end=n):
            b.store(start, ctr)
            head = fn.append_basic_block("rows.head")
            loop = fn.append_basic_block("rows.body")
            done = fn.append_basic_block("rows.done")
            b.branch(head)
            b.position_at_end(head)
            i = b.load(ctr, typ=I64)
            b.cbranch(b.icmp_signed("<", i, end), loop, done)
            b.position_at_end(loop)
            sign = b.load(b.gep(signs, [i], inbounds=True, source_etype=I8), typ=I8)
            fields = []
            for c, t in zip(cols, types):
                ety = col_ty.get(t, I64)
                v = b.load(b.gep(c, [i], inbounds=True, source_etype=ety), typ=ety)
                fields.append(b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if t == BOOL else v)
            body(sign, fields)
            b.store(b.add(i, i64(1)), ctr)
            b.branch(head)
            b.position_at_end(done)

        def call(trig, f, fields):
            b.call(f, [convert(b, v, t, p.type) for v, t, p in zip(fields, types, trig.params)])

        signed = self.signed_fns.get(rel.name)
        if per_row and signed is not None:
            def dispatch_signed(sign, fields):
                st, f = signed
                b.call(f, [b.sext(sign, I64), b.sitofp(sign, F64)]
                       + [convert(b, v, t, p.type) for v, t, p in zip(fields, types, st.params[2:])])
            row_loop(dispatch_signed)
        elif per_row:
            def dispatch(sign, fields):
                ins = [(t, f) for t, f in per_row if t.event.kind == "insert"]
                dele = [(t, f) for t, f in per_row if t.event.kind == "delete"]
                with b.if_else(b.icmp_signed(">", sign, ir.Constant(I8, 0))) as (on_ins, on_del):
                    with on_ins:
                        for t, f in ins:
                            call(t, f, fields)
                    with on_del:
                        for t, f in dele:
                            call(t, f, fields)
            row_loop(dispatch)
        if batch and delta is None:
            for _t, f in batch:
                b.call(f, [])
        elif batch:
            if delta.K != len(types):
                raise ValueError(f"imp: {delta.name} must have one key per column of {rel.name}")
            vt = delta.spec.value_type

            def fill(sign, fields):
                keys = [encode_key(b, convert(b, v, t, kt), kt)
                        for v, t, kt in zip(fields, types, delta.spec.key_types)]
                mult = b.sitofp(sign, F64) if vt == FLOAT else b.sext(sign, I64)
                delta.add(b, keys, mult)
            # the batch in chunks of at most DELTA_CHUNK_ROWS rows, each a batch of its own (a
            # batch trigger is correct for any batch, so rows [0, a) then [a, n) give the views
            # of all n): DELTA_<REL> then stays cache-sized and its memory is reused chunk after
            # chunk instead of growing (rehash after rehash, first-touch page faults) to the
            # whole batch's distinct rows (BSV, 55,254 rows in one batch: 32 % slower per row)
            start = b.alloca(I64, name="chunk")
            b.store(i64(0), start)
            head = fn.append_basic_block("chunks.head")
            body = fn.append_basic_block("chunks.body")
            done = fn.append_basic_block("chunks.done")
            b.branch(head)
            b.position_at_end(head)
            lo = b.load(start, typ=I64)
            b.cbranch(b.icmp_signed("<", lo, n), body, done)
            b.position_at_end(body)
            if chunk is None:
                hi = n
            else:
                hi = b.add(lo, i64(chunk))
                hi = b.select(b.icmp_signed("<", hi, n), hi, n)
            delta.clear(b)
            row_loop(fill, lo, hi)
            for _t, f in batch:
                b.call(f, [])
            delta.clear(b)
            b.store(hi, start)
            b.branch(head)
            b.position_at_end(done)
        failed = self.overflow.failed(b)
        for t in self.string_tables.values():
            if not t.total:
                err = b.load(self.module.get_global(t.symbol + ".error"), typ=I64)
                failed = b.or_(failed, b.icmp_signed("!=", err, i64(-1)))
        # the Interleaved feed runs a piece as many process_<REL> calls (one per run of ~2 events)
        # and compacts once after them: it sets compact.deferred meanwhile
        deferred = b.icmp_unsigned("!=", b.load(self.compact_deferred(), typ=I64), i64(0))
        with b.if_then(b.not_(b.or_(failed, deferred))):
            self.emit_compaction(b, i64(0))
        b.ret_void()
        return fn.name

    def lifecycle(self):
        self.compact_deferred()         # toaster.feed declares it (feed.py)
        for name, method in (("toaster.init", "init"), ("toaster.destroy", "destroy")):
            fn = ir.Function(self.module, ir.FunctionType(VOID, []), name)
            b = ir.IRBuilder(fn.append_basic_block())
            for m in self.maps.values():
                b.call(self.module.get_global(f"{m.name}.{method}"), [])
            if method == "destroy":   # the range indexes' dense arrays (range_dense.py)
                b.call(self.module.get_global("rix.dense.destroy"), [])
            if method == "init":   # ON SYSTEM READY: initial map values
                for t, f in self.trigger_fns:
                    if t.event.kind == "ready":
                        b.call(f, [])
            b.ret_void()
        fn = ir.Function(self.module, ir.FunctionType(VOID, [I64]), "toaster.compact")
        b = ir.IRBuilder(fn.append_basic_block())
        self.emit_compaction(b, fn.args[0])
        b.ret_void()


def generate_llvm(prog: ImpProgram, bulk_access: bool = False) -> LLVMModule:
    """bulk_access: also bulk get/set per map and the undo log's keys (bulk.py; undo log on)."""
    register_libm_symbols()      # the math intrinsics lower to libm calls the JIT must resolve
    # with the undo log first: nearly every program can fail at run time (checked integer
    # arithmetic: COUNT is an integer), so this generates the module once, not twice
    gen = _ModuleGen(prog, with_undo=True, bulk_access=bulk_access)
    if not bulk_access and not gen.fallible():   # nothing can fail at run time: no undo log
        gen = _ModuleGen(prog, with_undo=False)
    strings = tuple(sorted(gen.strings, key=gen.strings.get))
    return LLVMModule(prog, str(gen.module), strings, dict(gen.entry_points), tuple(gen.string_tables.values()),
                      gen.undo is not None, tuple(gen.overflow.sites))


@pass_("imp_to_llvm", "imp", "llvm")
def imp_to_llvm(prog: ImpProgram, options=None) -> LLVMModule:
    """Generate LLVM IR (native hash maps, one function per trigger, per-relation batch entry points)."""
    return generate_llvm(prog)
