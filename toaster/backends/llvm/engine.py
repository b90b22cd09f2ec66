"""LLVMEngine: JIT-compiles an ImpProgram (via imp_to_llvm) and runs it natively.

One native call per group of input batches: a reader's checked stream batches (`Batch.checked`)
go to `toaster.feed` (feed.py), linked into the program's module, which checks their numpy
columns itself (reading the array and tuple objects whose `id()`s Python puts in a reused slots
array), switches the undo log on and off, runs process_<REL> per batch and tests for failures:
per batch Python does a few lookups and slot stores (~1-2 us for a 1,000-row batch where the
former path below took 6-25). When no relation feeds a STRING column, apply/apply_many fill those
slots themselves (NativeFeed.run's work without its two Python calls: after a batch's native run
has evicted the caches each Python step costs 0.1-1 us). String columns read by a trigger are encoded to dictionary ids
inside that call, from their Arrow buffers, through a native string hash table kept equal to the
dictionary (string_hash.py); a batch with strings the table lacks returns to Python, which
interns them (once per new distinct string) and calls again. Dictionary-encoded columns get their
ids from the dictionary in Python (strings.py). Anything the native check refuses (another dtype, a strided or subclassed
array, an Arrow numeric column, NULLs, a TABLE) takes the Python path: the generic check and
conversion (Engine._checked), or for canonical columns `_fast_feed`, then `_run` computes the
column addresses and calls process_<REL>. read_map() reads the native hash table memory back
through the exported accessors.

Batches are atomic: when a trigger can fail on a string (a fallible string table, strings.py) and
some live string does fail, the batch runs with the native undo log on (undo.py) and is rolled
back if it fails, so the views equal those before it.

Integers are 64-bit and checked (overflow.py): an overflow fails the batch with
IntegerOverflowError naming the view. It is known only once it happened, so a program with checked
integer arithmetic (nearly every one: COUNT is an integer) runs *every* batch with the undo log on.
Chosen over re-running the batch from a snapshot because a snapshot costs O(state) per batch, the
log O(writes of the batch); the batch's scratch delta maps (DELTA_<R>_k) keep no records.
Cost, `python -m bench --queries tpch_q3,tpch_q17 --backends llvm --batch-sizes 1000,100000
--scale 0.1 --max-events 300000 --no-duckdb`, events/s, two interleaved rounds on a LOADED
machine (load average 5-8 from other jobs; noise is of the order of the differences):
    before (b8f5554)     q3 414k/585k, 1.49M/1.34M   q17 403k/443k, 595k/779k
    checked + undo log   q3 364k/500k, 0.995M/1.12M  q17 370k/333k, 675k/725k
    checked, log off     q3 705k/1.11M, 1.02M/1.88M  q17 530k/425k, 497k/570k  (unsound; to compare)
(idle machine, before only: q3 1.53M, 3.37M; q17 1.29M, 1.83M). Roughly 10-25% fewer events/s,
mostly from the undo records; compile time grows ~30% (one overflow branch per operation). After each batch the maps drop their
zero-valued entries (hashmap.py) and, every time the string dictionary has doubled since its last
collection, the strings no map key holds any more are freed (StringPool.collect).
"""
from __future__ import annotations

import ctypes
import time

import numpy as np
import pyarrow as pa
import llvmlite.binding as llvm

from toaster.engine import Engine
from toaster.errors import InputError
from toaster.runtime.int64 import overflow_error
from toaster.imperative.ir import ImpProgram
from toaster.runtime.batch import Batch
from toaster.runtime.checks import CANONICAL_DTYPES, canonical_string_column
from toaster.runtime.reads import ProgramReads
from toaster.types import BOOL, FLOAT, STRING
from toaster.backends.llvm.codegen import LLVMModule, generate_llvm
from toaster.backends.llvm.range_index import rebuilt_indexes
from toaster.backends.llvm.strings import StringPool
from toaster.backends.llvm.string_hash import NativeStringHash
from toaster.backends.llvm.feed import FAILED, HEADER, FeedRelation, NativeFeed, build_feed_ir, probe_layout
# the JIT (jit.py); compile_module, _init_llvm and the level constants are imported from here too
from toaster.backends.llvm.jit import LIGHT_PASSES, OPT_LEVELS, _init_llvm, compile_module  # noqa: F401


class LLVMEngine(Engine):
    backend = "llvm"

    def __init__(self, program, opt_level: int = 2, object_cache: str | None = None, atomic: bool = True):
        """atomic=False: a batch in which an integer overflows is not rolled back (no undo
        records for checked integers: the log of a 600,000-row batch is ~100 MB of writes); the
        error says so and the engine is closed. For a caller that stops at the first error and
        never reads the views after it (`--run`)."""
        module = program if isinstance(program, LLVMModule) else generate_llvm(program)
        prog: ImpProgram = module.program
        super().__init__(prog.relations, prog.queries)
        self.program = prog
        self.llvm_module = module
        # the range indexes that may keep only some levels natively (range_mask.py)
        self._rix_indexes = frozenset(rebuilt_indexes(prog))
        self._reads = ProgramReads(prog)
        layout = probe_layout()
        feed_relations = [FeedRelation(k, module.entry_points[r.name], tuple(r.types),
                                       self._reads.columns_needed(r.name))
                          for k, r in enumerate(prog.relations) if r.name in module.entry_points]
        self._atomic = atomic
        self._always_logged = bool(atomic and module.has_undo_log and module.overflow_sites)
        extra = () if layout is None else (build_feed_ir(
            feed_relations, self._always_logged, module.has_undo_log,
            [t.symbol + ".error" for t in module.string_tables if not t.total], layout,
            llvm.get_process_triple()),)
        # the execution engine must outlive every function pointer taken from it
        self._ee, self._mod, self._tm = compile_module(module.ir_text, opt_level, object_cache, extra)
        self.optimized_ir = str(self._mod)
        addr = self._ee.get_function_address
        self._process = {}
        for rel, fname in module.entry_points.items():
            ncols = len(self.relations[rel].columns)
            proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, *([ctypes.c_void_p] * ncols))
            self._process[rel] = proto(addr(fname))
        self._accessors = {}
        for spec in prog.maps:
            self._accessors[spec.name] = (
                ctypes.CFUNCTYPE(ctypes.c_int64)(addr(f"{spec.name}.count")),
                ctypes.CFUNCTYPE(ctypes.c_void_p)(addr(f"{spec.name}.keys")),
                ctypes.CFUNCTYPE(ctypes.c_void_p)(addr(f"{spec.name}.vals")),
            )
        self._loaders = {spec.name: ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
            addr(f"{spec.name}.load")) for spec in prog.maps}
        # range indexes keep only their used levels natively: all of them before raw reads and loads
        self._rix_unmask = ctypes.CFUNCTYPE(None)(addr("rix.unmask"))
        self._destroy = ctypes.CFUNCTYPE(None)(addr("toaster.destroy"))
        self._compact = ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr("toaster.compact"))
        self._overflow_site = ctypes.c_int64.from_address(self._ee.get_global_value_address("overflow.site"))
        if module.has_undo_log:
            self._undo_on = ctypes.c_int64.from_address(self._ee.get_global_value_address("undo.on"))
            self._rollback = ctypes.CFUNCTYPE(None)(addr("toaster.rollback"))
            self._undo_trim = ctypes.CFUNCTYPE(None)(addr("toaster.undo_trim"))
        else:
            self._undo_on = None
        self._pool = StringPool(module.strings, module.string_tables, self._ee.get_global_value_address)
        self._pool.sync()      # the literals' table entries; ON SYSTEM READY (in init) may read them
        ctypes.CFUNCTYPE(None)(addr("toaster.init"))()
        self._pool.check_errors()
        if self._overflow_site.value >= 0:      # ON SYSTEM READY's initial values
            raise overflow_error(module.overflow_sites[self._overflow_site.value], self.queries, prog)
        self._native_feed = None if layout is None else NativeFeed(
            self, feed_relations, self._ee.get_global_value_address, addr)
        if layout is not None:        # STRING columns are encoded inside toaster.feed
            self._pool.attach_hash(NativeStringHash(addr, self._ee.get_global_value_address))
            self._feed_calls = ctypes.c_int64.from_address(self._ee.get_global_value_address("feed.calls"))
            for r in prog.relations:      # the first batch's lookups, resolved now (~15 us)
                self._native_feed.relation(r.name)
        # only a fed STRING column adds strings in toaster.feed: else no collection test per batch
        self._feeds_strings = any(r.strings for r in feed_relations)
        self._plain_feed = self._native_feed is not None and not self._feeds_strings
        self._clock_cost = (0, 0)       # ns per timed toaster.feed call of its clock reads (time_native)
        self._zeros = np.zeros(1024, np.int64)     # the Python path's stand-in for unread columns
        self._clock = -1                # timing native calls: a clock id (time_native)
        self._py_native_ns = 0          # ... of the calls made by the Python path
        self._plans: dict = {}          # relation name -> _Feed
        self._fast: dict = {}           # batch.relation as given -> _Feed (stream relations only)
        self._open = True

    # ---------------------------------------------------------------- input
    def relations_needed(self) -> frozenset:
        return self._reads.relations_needed()

    def columns_needed(self, relation: str) -> tuple:
        return self._reads.columns_needed(self._decl(relation).name)

    # ---------------------------------------------------------- fast path
    def apply(self, batch: Batch) -> None:
        if self._plain_feed:          # apply_many's records filled without NativeFeed.run
            return self.apply_many([batch])
        nf = self._native_feed
        if nf is not None and self._open and nf.run((batch,)):
            self._after_feed()
            return
        feed = self._fast_feed(batch)
        if feed is None:              # anything unusual: the generic checks and conversions
            return super().apply(batch)
        self._run(feed, batch)
        self._streamed = True

    def apply_many(self, batches) -> None:
        if batches.__class__ is not list:
            batches = list(batches)
        nf = self._native_feed
        if nf is not None and self._open and batches:
            if self._plain_feed and len(batches) <= nf.capacity:
                # no STRING column fed: the records (relation index, id(signs), id(columns)) are
                # filled here, NativeFeed.run's work without its calls -- after a batch's native
                # run evicted the caches, every Python step costs ~0.1-1 us (BSV: ~4 -> ~2 us)
                slots, by_name, width, k = nf.slots, nf.by_name, nf.width, HEADER
                for b in batches:
                    fr = by_name.get(b.relation) if b.__class__ is Batch and b.checked else None
                    if fr is None:
                        break
                    slots[k] = fr.index
                    slots[k + 1] = id(b.signs)
                    slots[k + 2] = id(b.columns)
                    k += width
                else:
                    pool = self._pool
                    if pool._pending:
                        pool.sync()
                    logged = nf._logged = bool(pool._fallible) and pool.may_fail()
                    slots[0] = logged
                    rc = nf.call(len(batches), nf.address)
                    if rc == 0:
                        self._streamed = True
                        return
                    if rc & 3 == FAILED:      # batch rc >> 2 failed (rolled back if logged)
                        self._native_failure(logged or self._always_logged, rc >> 2)
                    # NOT_CANONICAL: no batch ran; nf.run finds the same, the Python path below
            if nf.run(batches):
                self._after_feed()
                return
        feeds = [self._fast_feed(b) for b in batches]
        if None in feeds:
            return super().apply_many(batches)
        for feed, b in zip(feeds, batches):
            self._run(feed, b)
        if batches:
            self._streamed = True

    def _apply_many(self, batches: list) -> None:
        for b in batches:             # checked by apply_many already
            self._run(self._feed(self._decl(b.relation)), b)

    def _after_feed(self) -> None:
        self._streamed = True
        if self._feeds_strings:
            pool = self._pool
            if len(pool) >= pool.collect_min:
                pool.maybe_collect(self._string_keys)

    def _native_failure(self, logged: bool, index: int) -> None:
        """Raise what made batch `index` of a toaster.feed call fail (rolled back if logged)."""
        failure = self._pool.take_error() if self._pool._fallible else None
        site = self._overflow_site.value
        if site >= 0:
            self._overflow_site.value = -1
            raise self._overflow(site, logged)
        if not logged:     # cannot happen: an error needs a failing live string
            raise InputError(f"{failure}; the batch was applied with 0 in its place, the views are "
                             "not reliable any more")
        raise InputError(f"{failure}; the batch was rejected, the views are unchanged")

    def _overflow(self, site: int, logged: bool):
        """The IntegerOverflowError of overflow site `site`; a batch that was not logged
        (atomic=False) is not undone: the engine is closed."""
        err = overflow_error(self.llvm_module.overflow_sites[site], self.queries, self.program)
        if logged:
            return err
        self.close()
        return type(err)(str(err).replace("the batch was not applied",
                                          "the batch was applied in part (no rollback: atomic=False) "
                                          "and the engine is closed"))

    # ---------------------------------------------------------- timing
    def time_native(self, clock: int | None) -> None:
        """Accumulate the time spent in native trigger code by `clock` (a time.CLOCK_* id;
        None: stop); native_seconds() reads it."""
        self._clock = -1 if clock is None else int(clock)
        if self._native_feed is not None:
            if self._clock >= 0 and self._open:
                self._clock_cost = self._native_clock_cost(self._clock)
            self._native_feed.clock.value = self._clock

    def native_seconds(self) -> float:
        ns = self._py_native_ns + (self._native_feed.ns.value if self._native_feed is not None else 0)
        return ns / 1e9

    def native_clock_seconds(self) -> tuple[float, float]:
        """(inside, total): CPU seconds the native entry's own clock reads have cost so far (two
        per timed toaster.feed call, a syscall each for a CPU clock: ~0.7 us on this machine),
        the part inside the timed window (counted in native_seconds()) and in all (the rest
        counts in the caller's time of apply only). The bench subtracts both: measuring is not
        maintenance. Calibrated by time_native; the Python path's own timing is not counted."""
        if self._native_feed is None:
            return 0.0, 0.0
        calls = self._feed_calls.value
        return calls * self._clock_cost[0] / 1e9, calls * self._clock_cost[1] / 1e9

    def _native_clock_cost(self, clock: int, calls: int = 200, rounds: int = 3) -> tuple[float, float]:
        """(inside, total) ns of a timed toaster.feed call's two clock reads: empty calls (no
        batch) with the clock on and off, timed by `clock` too; minima over `rounds` loops."""
        nf = self._native_feed
        call, address, read = nf.call, nf.address, time.clock_gettime_ns
        ns0, calls0 = nf.ns.value, self._feed_calls.value
        nf.slots[0] = 0
        on, off, inside = [], [], []
        for _ in range(rounds):
            for flag, spent in ((clock, on), (-1, off)):
                nf.clock.value = flag
                n0, t0 = nf.ns.value, read(clock)
                for _ in range(calls):
                    call(0, address)
                spent.append(read(clock) - t0)
                if flag >= 0:
                    inside.append(nf.ns.value - n0)
        nf.ns.value, self._feed_calls.value = ns0, calls0      # calibration is not maintenance
        total = max(0.0, (min(on) - min(off)) / calls)
        return min(min(inside) / calls, total), total

    def _fast_feed(self, batch):
        """The relation's feed if `batch` is a reader-checked stream batch whose columns the
        native code reads are canonical already -- what Engine._checked would return as it is,
        found with O(columns read) attribute checks -- else None."""
        if batch.__class__ is not Batch or not batch.checked:
            return None
        feed = self._fast.get(batch.relation)
        if feed is None:
            decl = self.relations.get(batch.relation)
            if decl is None or decl.kind != "stream" or decl.has_nulls:
                return None
            feed = self._fast[batch.relation] = self._feed(decl)
        s, cols = batch.signs, batch.columns
        n = len(s)
        if (s.__class__ is not np.ndarray or s.dtype != _INT8 or s.ndim != 1 or n == 0
                or len(cols) != feed.arity):
            return None
        for j, dtype in feed.dtypes:
            a = cols[j]
            if a.__class__ is not np.ndarray or a.dtype != dtype or a.shape != (n,):
                return None
        for j in feed.strings:
            a = cols[j]
            if not canonical_string_column(a, n):
                return None
        return feed

    def _feed(self, decl) -> "_Feed":
        """How a batch of `decl` becomes the native call's arguments (built once per relation)."""
        feed = self._plans.get(decl.name)
        if feed is None:
            need = self.columns_needed(decl.name)
            feed = self._plans[decl.name] = _Feed(
                self._process[decl.name] if decl.name in self._process else None,
                tuple(j for j, c in enumerate(decl.columns) if need[j] and c.type not in (STRING, BOOL)),
                tuple(j for j, c in enumerate(decl.columns) if need[j] and c.type == STRING),
                tuple(j for j, c in enumerate(decl.columns) if need[j] and c.type == BOOL),
                self._always_logged,
                tuple((j, CANONICAL_DTYPES[c.type]) for j, c in enumerate(decl.columns)
                      if need[j] and c.type in CANONICAL_DTYPES),
                len(decl.columns))
        return feed

    def _apply(self, batch: Batch) -> None:
        self._run(self._feed(self._decl(batch.relation)), batch)

    def _run(self, feed: "_Feed", batch: Batch) -> None:
        """O(columns read) Python per batch: the column addresses, the string columns' ids
        (vectorized), one native call; the rows are only touched by native code."""
        if not self._open:
            raise InputError("engine is closed")
        if feed.process is None:        # no trigger reads this relation
            return
        cols = batch.columns
        n = len(batch.signs)
        if n > len(self._zeros):
            self._zeros = np.zeros(2 * n, np.int64)
        pointers = [self._zeros.ctypes.data] * feed.arity     # unread columns: n zero words
        keep = []                       # converted arrays: alive until the native call returns
        for j in feed.numeric:
            a = cols[j]
            if a.__class__ is not np.ndarray or not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
                keep.append(a)
            try:                        # _address inlined: ~1 us per column and batch matters here
                pointers[j] = _addressof(_from_buffer(a))
            except (TypeError, ValueError, BufferError):
                pointers[j] = a.ctypes.data
        for j in feed.strings:
            col = cols[j]
            if col.__class__ is pa.ChunkedArray:
                if col.num_chunks == 1:         # a slice of a file's column: no copy
                    col = col.chunk(0)
                elif not pa.types.is_dictionary(col.type):
                    col = col.combine_chunks()      # one dictionary encoding, not one per chunk
            a = self._pool.encode(col)
            keep.append(a)
            pointers[j] = _address(a)
        for j in feed.bools:
            a = np.ascontiguousarray(cols[j], dtype=np.bool_).view(np.uint8)
            keep.append(a)
            pointers[j] = _address(a)
        pool = self._pool
        if pool._pending:               # the attribute tests spare a call per batch (~0.3 us each)
            pool.sync()
        signs = batch.signs
        if signs.__class__ is not np.ndarray or signs.dtype != np.int8 or not signs.flags.c_contiguous:
            signs = np.ascontiguousarray(signs, dtype=np.int8)
        logged = feed.logged or (self._undo_on is not None and pool.may_fail())
        if logged:
            self._undo_on.value = 1
        if self._clock >= 0:
            t0 = time.clock_gettime_ns(self._clock)
            feed.process(n, _address(signs), *pointers)
            self._py_native_ns += time.clock_gettime_ns(self._clock) - t0
        else:
            feed.process(n, _address(signs), *pointers)
        failure = pool.take_error() if pool._fallible else None
        site = self._overflow_site.value
        if logged:
            if failure is not None or site >= 0:
                self._rollback()
            else:
                self._undo_on.value = 0
                self._undo_trim()
        if site >= 0:
            self._overflow_site.value = -1
            raise self._overflow(site, logged)
        if failure is not None:
            if not logged:     # cannot happen: an error needs a failing live string
                raise InputError(f"{failure}; the batch was applied with 0 in its place, the views are "
                                 "not reliable any more")
            raise InputError(f"{failure}; the batch was rejected, the views are unchanged")
        if len(pool) >= pool.collect_min:
            pool.maybe_collect(self._string_keys)

    # ---------------------------------------------------------------- memory
    def compact(self) -> None:
        """Reclaim every zero-valued map entry now (batches do it when a map is half zeros)."""
        self._compact(1)

    def map_size(self, name: str) -> int:
        """Entries the native map holds (zero-valued ones not yet reclaimed included)."""
        return self._accessors[name][0]()

    def set_entries(self, name: str, entries: dict) -> None:
        """Set a map's contents to {key tuple: value} (as read_map gives them); what it held before
        is dropped. New strings are interned and their tables filled."""
        if name not in self._accessors:
            raise self._unknown_map(name)
        spec = self.program.map(name)
        keys = list(entries)
        words = np.zeros((len(keys), len(spec.key_types)), np.int64)
        for j, t in enumerate(spec.key_types):
            col = [k[j] for k in keys]
            if t == STRING:
                words[:, j] = [self._pool.intern(s) for s in col]
            elif t == FLOAT:    # one key for 0.0 and -0.0, as the native encode_key
                words[:, j] = (np.array(col, np.float64) + 0.0).view(np.int64)
            else:
                words[:, j] = np.array([int(v) for v in col], np.int64)
        self._pool.sync()
        self.load_map(name, words, np.array(list(entries.values())))

    def load_map(self, name: str, keys: np.ndarray, vals: np.ndarray) -> None:
        """Replace a map's contents by n entries: keys an (n, K) int64 array of native key words
        (STRING: ids of this engine's dictionary), vals its values (native `<map>.load`)."""
        spec = self.program.map(name)
        n = len(vals)
        keys = np.ascontiguousarray(keys, dtype=np.int64).reshape(n, len(spec.key_types))
        vals = np.ascontiguousarray(vals, dtype=np.float64 if spec.value_type == FLOAT else np.int64)
        self._rix_unmask()
        self._loaders[name](n, keys.ctypes.data, vals.ctypes.data)

    def _string_keys(self):
        """Every string id a nonzero map entry holds in a key (one array per map key column)."""
        for spec in self.program.maps:
            cols = [j for j, t in enumerate(spec.key_types) if t == STRING]
            if not cols:
                continue
            raw, vals = self._raw_entries(spec)
            live = vals != 0
            for j in cols:
                yield raw[live, j]

    def _raw_entries(self, spec):
        """(keys as an (n, K) int64 array, values) of a map, copied out of native memory. Only a
        range index's raw entries need its every level (reading a view keeps the indexes masked
        and dense: a result read per batch made them full width for good)."""
        if spec.name in self._rix_indexes:
            self._rix_unmask()
        count_fn, keys_fn, vals_fn = self._accessors[spec.name]
        n = count_fn()
        K = len(spec.key_types)
        vdtype = np.float64 if spec.value_type == FLOAT else np.int64
        if n == 0:
            return np.zeros((0, K), np.int64), np.zeros(0, vdtype)
        vals = np.frombuffer((ctypes.c_char * (8 * n)).from_address(vals_fn()), dtype=vdtype).copy()
        if K == 0:
            return np.zeros((n, 0), np.int64), vals
        raw = np.frombuffer((ctypes.c_char * (8 * n * K)).from_address(keys_fn()), dtype=np.int64)
        return raw.copy().reshape(n, K), vals

    # ---------------------------------------------------------------- output
    def read_map(self, name: str) -> dict:
        if not self._open:
            raise InputError("engine is closed")
        if name not in self._accessors:
            raise self._unknown_map(name)
        spec = self.program.map(name)
        raw, vals = self._raw_entries(spec)
        if len(vals) == 0:
            return {}
        if not spec.key_types:
            return {(): _value(vals[0], spec.value_type)} if vals[0] != 0 else {}
        # zero entries are absent (and their string ids may have been freed): drop them first
        keep = vals != 0
        raw, vals = raw[keep], vals[keep]
        columns = [self._decode_column(raw[:, j], t) for j, t in enumerate(spec.key_types)]
        return dict(zip(zip(*columns), vals.tolist()))

    def _decode_column(self, col: np.ndarray, t) -> list:
        if t == FLOAT:
            return col.view(np.float64).tolist()
        if t == STRING:
            strings = self._pool.strings
            return [strings[i] for i in col.tolist()]
        if t == BOOL:
            return [bool(v) for v in col.tolist()]
        return col.tolist()

    # ---------------------------------------------------------- durability
    def _checkpoint_state(self, with_tables: bool):
        from toaster.checkpoint import TableLayout
        return self._map_state((TableLayout(m.name, m.key_types, m.value_type)
                                for m in self.program.maps if m.kind == "view"), with_tables)

    def _restore_tables(self, tables: dict) -> None:
        """Bulk-load every map through its native `<map>.load` (keys encoded as the generated
        code encodes them: strings as pool ids, floats by their bits, -0.0 as 0.0)."""
        if not self._open:
            raise InputError("engine is closed")
        encoded = {}
        for name, entries in tables.items():       # encode everything before touching a map
            spec = self.program.map(name)
            entries = {k: v for k, v in entries.items() if v != 0}
            n, K = len(entries), len(spec.key_types)
            keys = np.zeros((n, K), dtype=np.int64)
            for j, t in enumerate(spec.key_types):
                col = [k[j] for k in entries]
                if t == STRING:
                    keys[:, j] = self._pool.encode(col) if n else []
                elif t == FLOAT:
                    keys[:, j] = (np.asarray(col, dtype=np.float64) + 0.0).view(np.int64)
                else:
                    keys[:, j] = np.asarray(col, dtype=np.int64)
            vdtype = np.float64 if spec.value_type == FLOAT else np.int64
            vals = np.asarray(list(entries.values()), dtype=vdtype)
            encoded[name] = (n, np.ascontiguousarray(keys), np.ascontiguousarray(vals))
        self._pool.sync()
        self._rix_unmask()
        for name, (n, keys, vals) in encoded.items():
            self._loaders[name](n, keys.ctypes.data, vals.ctypes.data)

    def close(self) -> None:
        if getattr(self, "_open", False):
            self._open = False
            self._destroy()
            if self._native_feed is not None:
                self._native_feed.release()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _value(v, t):
    return float(v) if t == FLOAT else int(v)


class _Feed:
    __slots__ = ("process", "numeric", "strings", "bools", "logged", "dtypes", "arity")

    def __init__(self, process, numeric, strings, bools, logged, dtypes, arity):
        self.process = process          # the relation's native entry point (None: not read)
        self.numeric = numeric          # positions of the INT/FLOAT/DATE columns read
        self.strings = strings          # ... STRING columns read (dictionary ids)
        self.bools = bools              # ... BOOL columns read (bytes)
        self.logged = logged            # every batch runs with the undo log (checked integers)
        self.dtypes = dtypes            # (position, numpy dtype) of the numeric/BOOL columns read
        self.arity = arity              # columns of the relation


_INT8 = np.dtype(np.int8)




_addressof = ctypes.addressof
_from_buffer = ctypes.c_char.from_buffer


def _address(a: np.ndarray) -> int:
    """The data address of a contiguous array (ctypes' from_buffer is ~3x cheaper than
    ndarray.ctypes; read-only arrays, e.g. zero-copy from Arrow, take the slow path)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data
