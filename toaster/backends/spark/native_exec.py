"""Native blocks (executor side): the JIT'd partition program and the resident native replicas.

A worker process JIT-compiles a partition program (native.py) once, keyed by the hash of its
IR text, and keeps it in a module registered in `sys.modules` (it outlives the task). The
module's maps are one partition's maps; the process holds one *set* of maps per (store,
partition) it ran a task for, and switches between them in O(maps) with the module's
`toaster.state_save / state_load` (the maps' globals as words): one JIT per program and
process, however many partitions it serves. A set's views are the partition's replica; each
view carries the seq it reflects (the versioning of state.py, per view). The machine code is
also kept in a per-user directory of the machine's temp dir (MCJIT's object cache, keyed by the
IR text): a later worker process (Spark reaps idle ones) loads it instead of compiling again.

Exchange format: columnar. A map's records travel as (name, key columns, values): numpy arrays,
strings as object arrays; they are encoded to / decoded from this process's string pool
vectorized (StringPool.encode: Arrow dictionary encoding; decoding: one numpy take).

String pool: one per module, shared by all its map sets. `module_for` (the start of every task,
and of every use of the driver's JIT) collects it as the llvm engine does (StringPool.collect,
when it doubled since the last collection): the ids kept are those of every map set's nonzero
entries (`_string_keys`: the active set and each saved one), the literals and the derived
tables. Never while the undo log holds records (the driver views' records live for a whole
step: a rollback must find its keys' ids unchanged); between tasks no id is held outside the
maps (records travel as strings, the durable copy stores strings).
"""
from __future__ import annotations

import ctypes
import sys
import time
from collections import OrderedDict

import numpy as np

_REGISTRY = "_toaster_spark_native"
_MAX_STORES = 4


class NativeBlockError(RuntimeError):
    """A native block failed (an overflow or a string error); the message carries the mark the
    driver turns into the engine's error."""


def _registry():
    mod = sys.modules.get(_REGISTRY)
    if mod is None:
        mod = type(sys)(_REGISTRY)
        mod.modules = {}               # program key -> NativeModule
        mod.stores = OrderedDict()     # store -> program key
        mod.pinned = {}                # store -> program key: never evicted (the driver's views)
        mod.compiles = []              # (program key, seconds) of every JIT in this process
        mod.loads = []                 # the same for every NativeModule made (compiled or cached)
        sys.modules[_REGISTRY] = mod
    return mod


def compiles() -> list:
    """(program key, JIT seconds) of every partition program this process compiled (from IR:
    a module loaded from the object cache is not counted)."""
    return list(_registry().compiles)


def loads() -> list:
    """(program key, seconds) of every partition program this process set up (compiled or
    loaded from the object cache)."""
    return list(_registry().loads)


def pool_sizes() -> list:
    """(program key, dictionary slots, live strings, collections) of every partition program this
    process holds: its string pool's size (tests, bench/spark_state/string_pools.py)."""
    out = []
    for key, nm in _registry().modules.items():
        pool = nm.engine._pool
        out.append((key, len(pool.strings), len(pool), pool.collections))
    return out


def _cfn(ret, *args):
    return ctypes.CFUNCTYPE(ret, *args)


class PartitionMaps:
    __slots__ = ("words", "seqs")

    def __init__(self, words):
        self.words = words             # the saved globals (None while active)
        self.seqs = {}                 # view -> seq it reflects (-1: dirty)


class NativeModule:
    """One JIT'd partition program in this process and the partition map sets it holds."""

    def __init__(self, pp, opt_level: int):
        from toaster.backends.llvm.engine import LLVMEngine
        from toaster.types import Type
        t0 = time.perf_counter()
        self.engine = LLVMEngine(pp.module, opt_level, object_cache=_object_cache_dir())
        if not self.engine._ee.toaster_from_cache:
            _registry().compiles.append((pp.key, time.perf_counter() - t0))
        _registry().loads.append((pp.key, time.perf_counter() - t0))
        self.pp = pp
        e = self.engine
        addr = e._ee.get_function_address
        self.process = {b: e._process[rel] for b, rel in pp.entries.items()}
        bulk = _cfn(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
        self.bulk = {(m.name, op): bulk(addr(f"{m.name}.{op}"))
                     for m in pp.module.program.maps for op in ("getmany", "setmany", "addmany")}
        self.undo_words = _cfn(ctypes.c_int64)(addr("toaster.undo_words"))
        self.touched_fn = _cfn(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(addr("toaster.touched"))
        self.n_words = _cfn(ctypes.c_int64)(addr("toaster.state_words"))()
        self.save = _cfn(None, ctypes.c_void_p)(addr("toaster.state_save"))
        self.load_state = _cfn(None, ctypes.c_void_p)(addr("toaster.state_load"))
        self.init = _cfn(None)(addr("toaster.init"))
        self.tags = {m.name: i for i, m in enumerate(pp.module.program.maps)}
        self.specs = {m.name: m for m in pp.module.program.maps}
        self.key_types = {n: tuple(Type(t) for t in k) for n, (k, _) in pp.map_types.items()}
        self.parts: dict = {}          # (store, p) -> PartitionMaps
        self.active = None            # (store, p) whose maps the globals hold
        self._strings = np.empty(0, dtype=object)     # decode's copy of the pool's strings ...
        self._strings_at = None                       # ... valid while this stays _pool_state()
        self._free_initial = True      # the maps LLVMEngine's init allocated belong to no partition

    # ------------------------------------------------------------ partitions
    def activate(self, store: str, p: int) -> PartitionMaps:
        key = (store, p)
        part = self.parts.get(key)
        if self.active == key:
            return part
        if self.active is not None:
            cur = self.parts[self.active]
            cur.words = np.empty(self.n_words, np.int64)
            self.save(cur.words.ctypes.data)
        elif self._free_initial:       # adopt the maps allocated at construction
            self._free_initial = False
            part = self.parts[key] = PartitionMaps(None)
            self.active = key
            return part
        if part is None:
            self.init()                # fresh (empty) maps for this partition
            part = self.parts[key] = PartitionMaps(None)
        else:
            self.load_state(part.words.ctypes.data)
            part.words = None
        self.active = key
        return part

    def drop_store(self, store: str) -> None:
        for key in [k for k in self.parts if k[0] == store]:
            self.activate(*key)
            self.engine._destroy()
            del self.parts[key]
            self.active = None
            self._free_initial = False

    def rename_store(self, old: str, new: str) -> None:
        for key in [k for k in self.parts if k[0] == old]:
            self.parts[(new, key[1])] = self.parts.pop(key)
            if self.active == key:
                self.active = (new, key[1])

    # ---------------------------------------------------------- columns
    def encode(self, name: str, cols, n: int) -> np.ndarray:
        from toaster.types import BOOL, FLOAT, STRING
        types = self.key_types[name]
        words = np.empty((n, len(types)), np.int64)
        for j, (t, col) in enumerate(zip(types, cols)):
            if t == STRING:
                arrow = type(col).__module__.startswith("pyarrow")    # the pool reads Arrow directly
                words[:, j] = self.engine._pool.encode(col if arrow else list(col)) if n else 0
            elif t == FLOAT:
                words[:, j] = (np.asarray(col, np.float64) + 0.0).view(np.int64)
            elif t == BOOL:
                words[:, j] = np.asarray(col, bool).astype(np.int64)
            else:
                words[:, j] = np.asarray(col, np.int64)
        return words

    def decode(self, name: str, words: np.ndarray) -> list:
        from toaster.types import BOOL, FLOAT, STRING
        out = []
        for j, t in enumerate(self.key_types[name]):
            w = words[:, j]
            if t == STRING:
                at = self._pool_state()
                if self._strings_at != at:
                    self._strings = np.array(self.engine._pool.strings + [""], dtype=object)[:-1]
                    self._strings_at = at
                out.append(self._strings[w])
            elif t == FLOAT:
                out.append(w.view(np.float64))
            elif t == BOOL:
                out.append(w.astype(bool))
            else:
                out.append(w)
        return out

    def _pool_state(self) -> tuple:
        """Changes whenever an id may name another string: a collection frees ids, and interning
        reuses freed ones (the dictionary's length alone does not move then) or appends."""
        pool = self.engine._pool
        return pool.collections, len(pool.strings), len(pool._free)

    # ---------------------------------------------------------- strings
    def maybe_collect(self) -> bool:
        """Collect the string pool when it doubled since the last collection (StringPool's
        test) and no undo record is pending; True when it collected."""
        pool = self.engine._pool
        if len(pool) < pool.collect_min or self.undo_words():
            return False
        return pool.maybe_collect(self._string_keys)

    def _string_keys(self) -> list:
        """The string ids every map set's nonzero entries hold in their keys: the globals' set
        (the active one, or the maps init made that no partition adopted yet; not those a
        drop_store destroyed), then each saved set, loaded in turn and saved back (reading a
        range index's raw entries unmasks it: its globals change) before the globals are put
        back as they were. O(state), once per doubling of the pool."""
        e = self.engine
        keys = list(e._string_keys()) if self.active is not None or self._free_initial else []
        saved = [part for part in self.parts.values() if part.words is not None]
        if saved:
            current = np.empty(self.n_words, np.int64)
            self.save(current.ctypes.data)
            for part in saved:
                self.load_state(part.words.ctypes.data)
                keys += list(e._string_keys())
                self.save(part.words.ctypes.data)
            self.load_state(current.ctypes.data)
        return keys

    def _values(self, name: str, vals) -> np.ndarray:
        from toaster.types import FLOAT
        dt = np.float64 if self.specs[name].value_type == FLOAT else np.int64
        return np.ascontiguousarray(vals, dtype=dt)

    def _call_bulk(self, name: str, op: str, cols, vals) -> None:
        vals = self._values(name, vals)
        n = len(vals)
        words = np.ascontiguousarray(self.encode(name, cols, n))
        self.engine._pool.sync()
        self.bulk[(name, op)](n, words.ctypes.data, vals.ctypes.data)

    def replace(self, name: str, cols, vals) -> None:
        """The map's contents become these entries (zero values not stored)."""
        self.engine._loaders[name](0, None, None)
        if len(vals):
            self._call_bulk(name, "setmany", cols, vals)

    def add(self, name: str, chunks) -> None:
        """Clear the map, then add every (cols, vals) chunk (repeated keys sum)."""
        self.engine._loaders[name](0, None, None)
        for cols, vals in chunks:
            if len(vals):
                self._call_bulk(name, "addmany", cols, vals)

    def set_entries(self, name: str, cols, vals) -> None:
        if len(vals):
            self._call_bulk(name, "setmany", cols, vals)

    def entries(self, name: str):
        """(key columns, values) of the map's nonzero entries."""
        raw, vals = self.engine._raw_entries(self.specs[name])
        keep = vals != 0
        return self.decode(name, raw[keep]), vals[keep]

    def touched(self, name: str):
        """(key columns, new values) of every key the undo log saw written (0: removed).
        Multi-column keys keep the log's repeats (each with the key's final value): the delta
        is applied by setmany, where a repeat is idempotent, and deduplicating 10^5-10^6 rows
        of several columns cost more than the repeats do (TPC-H Q17 at SF 1: ~100 ms per task
        for 277 K two-column keys, none repeated). One-column keys are deduplicated (cheap)."""
        spec = self.specs[name]
        K = len(spec.key_types)
        buf = np.empty(max(self.undo_words(), 1), np.int64)
        rows = self.touched_fn(self.tags[name], buf.ctypes.data)
        keys = buf[:rows * K].reshape(rows, K)
        if K == 1:
            keys = _distinct_rows(keys)
        elif rows and not K:
            keys = np.zeros((1, 0), np.int64)
        keys = np.ascontiguousarray(keys)
        vals = self._values(name, np.zeros(len(keys)))      # filled by getmany
        self.bulk[(name, "getmany")](len(keys), keys.ctypes.data, vals.ctypes.data)
        return self.decode(name, keys), vals

    # ------------------------------------------------------------- running
    def run_block(self, block: str) -> None:
        e = self.engine
        self.process[block](0, None)
        failure = e._pool.take_error()
        site = e._overflow_site.value
        if site >= 0:
            e._overflow_site.value = -1
            from toaster.backends.spark.worker import OVERFLOW_MARK
            m = e.llvm_module.overflow_sites[site]
            raise NativeBlockError(f"{OVERFLOW_MARK}[{self.pp.blame.get(m, m)}]")
        if failure is not None:
            raise NativeBlockError(f"{failure}; the batch was rejected, the views are unchanged")

    def log(self, on: bool, trim: bool = True) -> None:
        """Switch the undo log; switched off with `trim`, its records are dropped (committed),
        without, they stay for a later `rollback` or `log(False)` (a step of several blocks)."""
        e = self.engine
        e._undo_on.value = 1 if on else 0
        if not on and trim:
            e._undo_trim()

    def rollback(self) -> None:
        """Give every view the value it had before the log's first record (newest first)."""
        self.engine._undo_on.value = 0
        self.engine._rollback()


def _distinct_rows(keys: np.ndarray) -> np.ndarray:
    """The distinct rows of an (n, 1) int64 array, in no particular order: Arrow's hash
    unique (np.unique sorts: ~20x slower on the 10^5-10^6 keys a large batch writes)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    return pc.unique(pa.array(keys[:, 0])).to_numpy().reshape(-1, 1)


def _object_cache_dir() -> str | None:
    """The machine code of partition programs, shared by this user's worker processes on this
    machine (a new Python worker loads it instead of optimizing and compiling again)."""
    import os
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"toaster-jit-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        if os.stat(path).st_uid != os.getuid():
            return None              # not ours: never load machine code others could write
    except OSError:
        return None
    return path


def module_for(spec: dict) -> NativeModule:
    """This process's JIT of the spec's partition program (compiled on first use)."""
    reg = _registry()
    key = spec["native_key"]
    nm = reg.modules.get(key)
    if nm is None:
        nm = reg.modules[key] = NativeModule(spec["native"].value, spec["native_opt"])
    if "collect_min" in spec:
        nm.engine._pool.collect_min = spec["collect_min"]
    nm.maybe_collect()                 # before the task encodes anything: no id held outside the maps
    store = spec["store"]
    if spec.get("pinned"):             # resident state that no durable copy rebuilds
        reg.pinned[store] = key
        return nm
    if store not in reg.stores:
        reg.stores[store] = key
        while len(reg.stores) > _MAX_STORES:
            old, okey = reg.stores.popitem(last=False)
            _drop(reg, old, okey)
    reg.stores.move_to_end(store)
    return nm


def is_pinned(store: str) -> bool:
    return store in _registry().pinned


def drop_store(store: str) -> None:
    reg = _registry()
    _drop(reg, store, reg.stores.pop(store, None) or reg.pinned.pop(store, None))


def _drop(reg, store: str, key) -> None:
    """Free the store's map sets; a program no store uses any more goes too (its machine code
    stays in the object cache)."""
    nm = reg.modules.get(key)
    if nm is not None:
        nm.drop_store(store)
        if not nm.parts and key not in reg.stores.values() and key not in reg.pinned.values():
            del reg.modules[key]
