"""The driver's local blocks as native code (issue 10 item 5: no Python per tuple on the driver).

A trigger whose first block is not an input block (native_input.py) runs local blocks on the
driver: TPC-H Q4's LINEITEM trigger Gathers two views and joins its batch with them in a local
block before it Scatters the result. With native blocks such a *driver block* (a local block
that writes only temps and reads no driver view) is an entry point of the driver's own program
(`PartitionProgram.driver_program`: the input and driver blocks, no dist block; never shipped
to or compiled by the executors), JIT'd on the driver (job_plan._driver_module, the store the
input blocks run on the driver already use):

    its maps in:   the batch as columns (ColumnarDelta: no net_delta dict), the Gathered temps
                   as the collected columns (`Columns`: job_plan keeps them, no dict), other
                   temps from dicts -- each loaded with addmany (repeated keys sum)
    the block:     process_BLOCK_<name>, overflow and string errors as the executors' blocks
    its temps out: `Columns` of the map's entries, which scatter / broadcast split as they are

A local block that writes or reads a driver view (TPC-H Q22's CUSTOMER block adds into
`NUMCUST_mCUSTOMERn @ Local`) keeps the generated Python function over `IndexedMap`s: the
views' undo log, checkpoints and restore are dicts. A Python block reading a `Columns` temp
gets it as a dict (`as_dicts`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toaster.dist.ir import Exchange, delta_map_name, map_names


@dataclass(frozen=True)
class DriverBlock:
    """A local block the driver runs in its JIT of the partition program."""
    block: str          # its name: the entry point
    reads: tuple        # block-level maps loaded before it runs (batch, gathered and other temps)
    writes: tuple       # the temps it writes (read back as Columns)
    fresh: tuple        # the temps it starts empty
    scratch: tuple      # its scratch maps, as the partition program names them (cleared first)


class Columns:
    """A driver temp as column chunks [(key columns, values)] (repeated keys sum, zeros are no
    entry): what a Gather collected or a native driver block wrote."""
    __slots__ = ("chunks",)

    def __init__(self, chunks=()):
        self.chunks = list(chunks)

    def __len__(self) -> int:          # rows, not distinct keys (only "is it empty" is asked)
        return sum(len(v) for _, v in self.chunks)

    def as_dict(self) -> dict:
        from toaster.backends.spark.native import column_items
        out: dict = {}
        for cols, vals in self.chunks:
            for k, v in column_items(cols, vals):
                x = out.get(k, 0) + v
                if x != 0:
                    out[k] = x
                else:
                    out.pop(k, None)
        return out

    def merged(self) -> tuple:
        """(key columns, values) of all chunks concatenated (repeats kept: addmany sums them)."""
        if len(self.chunks) == 1:
            return self.chunks[0]
        width = len(self.chunks[0][0])
        cols = [np.concatenate([c[j] for c, _ in self.chunks]) for j in range(width)]
        return cols, np.concatenate([v for _, v in self.chunks])


def driver_blocks(prog, lowered: dict, inputs: dict) -> tuple[dict, frozenset]:
    """(block name -> DriverBlock, relations whose batch may reach the driver as columns):
    the local blocks other than input blocks that write only temps and read no view; a
    relation is columnar when it has such a block and every block reading its batch is one
    (or its input block), and no exchange reads the batch itself."""
    tags = prog.tags()
    input_names = {ib.block for ib in inputs.values()}
    out = {}
    columnar = set()
    for trig in prog.triggers:
        delta = delta_map_name(trig.event.relation) if trig.event.kind == "batch" else None
        readers_ok, has_driver = True, False
        for b in trig.blocks:
            if b.mode == "exchange":
                if any(isinstance(it, Exchange) and it.source == delta for it in b.items):
                    readers_ok = False
                continue
            code = lowered[id(b)]
            reads = set().union(*(map_names(it.stmt.rhs) for it in b.items))
            writes = tuple(dict.fromkeys(it.stmt.target for it in b.items))
            native = (b.mode == "local" and code.name not in input_names
                      and all(tags[w].kind == "temp" for w in writes)
                      and all(tags[r].kind == "temp" for r in reads if r in tags))
            if native:
                out[code.name] = DriverBlock(code.name, tuple(code.params), writes, tuple(code.fresh),
                                             tuple(f"{code.name}__{s}" for s in code.scratch))
                has_driver = True
            elif delta in reads and code.name not in input_names:
                readers_ok = False
        if delta is not None and readers_ok and has_driver:
            columnar.add(trig.event.relation)
    return out, frozenset(columnar)


def _load(nm, name: str, value, types: dict) -> None:
    from toaster.backends.spark import native, native_input
    if isinstance(value, native_input.ColumnarDelta):
        key_types = types[name][0]
        data = value.slices(1, range(len(key_types)))[0]
        if data is None:
            nm.add(name, ())
            return
        cols, signs = native_input._read_slice(data, key_types)
        nm.add(name, [(cols, signs)])
    elif isinstance(value, Columns):
        nm.add(name, value.chunks)
    else:
        nm.add(name, [native.dict_columns(value, types[name])])


def runner(rt, db: DriverBlock):
    """The closure run_local runs (now or after the job) for driver block `db` of runtime `rt`."""
    def run():
        nm = rt._driver_module()
        types = nm.pp.map_types
        for m in db.reads:
            if m not in db.fresh:
                _load(nm, m, rt.local.get(m, {}), types)
        for m in db.fresh + db.scratch:
            nm.add(m, ())
        nm.run_block(db.block)
        for w in db.writes:
            rt.local[w] = Columns([nm.entries(w)])
        for m in set(db.reads) | set(db.writes):
            nm.add(m, ())              # the driver's copies are not kept (a Gather may be a whole view)
    return run


def as_dicts(rt, reads, fn):
    """`fn` (a generated Python local block) with the `Columns` temps it reads made dicts first."""
    def run():
        for m in reads:
            if isinstance(rt.local.get(m), Columns):
                rt.local[m] = rt.local[m].as_dict()
        fn()
    return run


def columns_of(value, types) -> tuple:
    """(key columns, values) of a driver temp to Scatter or Broadcast: a `Columns` as it is, a
    dict converted (Python per entry: a temp a Python block wrote)."""
    from toaster.backends.spark import native
    if isinstance(value, Columns) and value.chunks:
        return value.merged()
    return native.dict_columns({} if isinstance(value, Columns) else value, types)
