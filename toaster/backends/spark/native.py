"""Native blocks (driver side): the ONE partition program of a distributed program.

Every dist block of every trigger is already an imperative program (blocks.py). They become
the entry points of one LLVM module, compiled by the llvm backend's own codegen
(`generate_llvm(bulk_access=True)`): one batch trigger per block, on a column-less relation
`BLOCK_<name>` (so `process_BLOCK_<name>(0, NULL)` runs exactly that block), and the maps of all
blocks as the module's maps -- the views (resident: the partition's replica), the dist temps and
the batches' `DELTA_<R>` (bulk-loaded from the exchanged columns before a block runs), and each
block's scratch maps (renamed `<block>__<map>`: two blocks may use one scratch name with other
types). The executors JIT it once per (program, partition) and worker process (native_exec.py).

Anything the llvm codegen refuses is an UnsupportedError here, at compile time.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from toaster.calculus.maps import Event
from toaster.errors import UnsupportedError
from toaster.imperative.ir import ForEach, If, ImpProgram, ImpTrigger, MapAdd, MapClear, MapGet, MapSet, MapSpec
from toaster.runtime.int64 import blame_maps, imp_writes
from toaster.schema import RelationDecl
from toaster.dist.ir import DistProgram, delta_map_name

BLOCK_RELATION = "BLOCK_"


@dataclass(frozen=True)
class PartitionProgram:
    """The native code of a program's dist blocks and what the executors need to drive it."""
    module: object              # LLVMModule (imp_to_llvm with bulk accessors)
    key: str                    # sha256 of the LLVM IR text: the JIT cache key
    entries: dict = field(hash=False, compare=False)     # block name -> relation of its entry point
    fresh: dict = field(hash=False, compare=False)       # block name -> dist temps it starts empty
    blame: dict = field(hash=False, compare=False)       # overflow site name -> map to name
    map_types: dict = field(hash=False, compare=False)   # map -> (key type names, value type name)
    views: tuple = ()                                     # the resident (Dist view) maps
    inputs: dict = field(default_factory=dict, hash=False, compare=False)   # relation -> InputBlock
    driver: dict = field(default_factory=dict, hash=False, compare=False)   # block -> native_driver.DriverBlock
    columnar: frozenset = frozenset()     # relations whose batch reaches the driver blocks as columns
    # the driver's views (`@ Local`) resident in the driver's program, read and written by its
    # driver blocks (native_driver.py); `driver_python`: why local blocks stay Python, if some do
    driver_views: tuple = ()
    driver_python: str | None = field(default=None, hash=False, compare=False)
    # the driver's own program (input and driver blocks, no dist block): the executors never
    # compile the driver blocks, and it is not shipped to them (__getstate__)
    driver_program: object = field(default=None, hash=False, compare=False)

    def __getstate__(self):
        return {**self.__dict__, "driver_program": None}

    @property
    def ir_text(self) -> str:
        return self.module.ir_text


def _rename(node, names: dict):
    """The imperative statement/expression with map names replaced (scratch maps per block)."""
    if isinstance(node, tuple):
        return tuple(_rename(x, names) for x in node)
    if isinstance(node, (MapGet, ForEach, MapAdd, MapSet, MapClear)):
        node = replace(node, map=names.get(node.map, node.map))
    if hasattr(node, "__dataclass_fields__"):
        changes = {}
        for f in node.__dataclass_fields__:
            v = getattr(node, f)
            if isinstance(v, tuple) or hasattr(v, "__dataclass_fields__"):
                nv = _rename(v, names)
                if nv is not v:
                    changes[f] = nv
        return replace(node, **changes) if changes else node
    return node


def partition_program(dist: DistProgram, blocks, inputs: dict | None = None, driver: dict | None = None,
                      columnar: frozenset = frozenset(), dist_blocks: bool = True) -> PartitionProgram:
    """Build and generate the partition program of `blocks` (BlockCode of every block): the
    dist blocks, the input blocks (`inputs`: relation -> native_input.InputBlock) that the
    executors run on their slice of a batch, and the driver's local blocks (`driver`: block ->
    native_driver.DriverBlock) that the driver runs in its own JIT of the program (with
    `dist_blocks=False`: the driver's program, without the dist blocks)."""
    inputs, driver = inputs or {}, driver or {}
    input_names = {i.block for i in inputs.values()} | set(driver)
    from toaster.backends.llvm.codegen import generate_llvm
    tags = dist.tags()
    maps: dict[str, MapSpec] = {}
    relations, triggers, entries, fresh, blame = [], [], {}, {}, {}
    for code in blocks:
        if (code.mode != "dist" or not dist_blocks) and code.name not in input_names:
            continue
        names = {s: f"{code.name}__{s}" for s in code.scratch}
        for spec in code.imp.maps:
            name = names.get(spec.name, spec.name)
            if spec.name in names:
                kind = "temp"
            elif spec.name.startswith("DELTA_") and spec.name not in tags:
                kind = "delta"
            elif spec.name in tags and tags[spec.name].kind == "view":
                kind = "view"
            else:
                kind = "temp"
            new = MapSpec(name, spec.key_types, spec.value_type, kind, spec.indexes)
            old = maps.get(name)
            if old is not None:
                if (old.key_types, old.value_type) != (new.key_types, new.value_type):
                    raise UnsupportedError(f"native blocks: map {name} has two types in two blocks")
                new = replace(old, indexes=tuple(dict.fromkeys(old.indexes + new.indexes)))
            maps[name] = new
        rel = f"{BLOCK_RELATION}{code.name}"
        relations.append(RelationDecl(rel, (), "stream"))
        body = _rename(code.imp.triggers[0].body, names)
        triggers.append(ImpTrigger(f"on_{code.name}", Event("batch", rel, ()), (), body))
        entries[code.name] = rel
        fresh[code.name] = tuple(code.fresh)
        # an overflow in native code names the map written (llvm); the Python blocks name a
        # scratch map's statement's block-level map instead: translate
        scratch = set(names.values())
        py = blame_maps(body, lambda st: (m for m in imp_writes(st) if m not in scratch))
        for stmt, b in zip(body, py):
            for m in imp_writes(stmt):
                if m in scratch and b is not None:
                    blame.setdefault(m, b)
        blame[f"trigger.on_{code.name}"] = next((b for b in py if b), "?")
    imp = ImpProgram(tuple(relations), tuple(maps.values()), tuple(triggers), (), mode="batch")
    module = generate_llvm(imp, bulk_access=True)
    key = hashlib.sha256(module.ir_text.encode()).hexdigest()
    types = map_types(dist)        # every map the driver may scatter, and the module's own
    types.update({m.name: (tuple(str(t) for t in m.key_types), str(m.value_type)) for m in maps.values()})
    views = tuple(m.name for m in maps.values() if m.kind == "view")
    return PartitionProgram(module, key, entries, fresh, blame, types, views, dict(inputs), dict(driver),
                            frozenset(columnar))


def map_types(dist: DistProgram) -> dict:
    """Key and value type names of every map of the distributed program (and its deltas)."""
    out = {m.name: (tuple(str(k.type) for k in m.keys), str(m.type)) for m in dist.maps}
    for r in dist.relations:
        out.setdefault(delta_map_name(r.name), (tuple(str(c.type) for c in r.columns), "int"))
    return out


_DTYPES = {"string": object, "float": np.float64, "bool": np.bool_}


def dict_columns(d: dict, types) -> tuple:
    """(key columns, values) of a driver map {key tuple: value}; `types`: (key type names,
    value type name)."""
    key_types, vtype = types
    keys = list(d)
    cols = []
    for j, t in enumerate(key_types):
        col = np.empty(len(keys), _DTYPES.get(t, np.int64))
        if keys:
            col[:] = [k[j] for k in keys]
        cols.append(col)
    vals = np.fromiter(d.values(), np.float64 if vtype == "float" else np.int64, len(keys))
    return cols, vals


def column_items(cols, vals):
    """(key tuple, value) pairs of columns (the inverse of dict_columns, Python values)."""
    vals = vals.tolist()
    if not cols:
        return [((), v) for v in vals]
    return list(zip(zip(*(c.tolist() for c in cols)), vals))
