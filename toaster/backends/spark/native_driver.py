"""The driver's local blocks as native code (issue 10 item 5: no Python per tuple on the driver).

A trigger whose first block is not an input block (native_input.py) runs local blocks on the
driver: TPC-H Q4's LINEITEM trigger Gathers two views and joins its batch with them in a local
block before it Scatters the result. With native blocks such a *driver block* (a local block
other than an input block) is an entry point of the driver's own program
(`PartitionProgram.driver_program`: the input and driver blocks, no dist block; never shipped
to or compiled by the executors), JIT'd on the driver (job_plan._driver_module, the store the
input blocks run on the driver already use):

    its maps in:   the batch as columns (ColumnarDelta: no net_delta dict), the Gathered temps
                   as the collected columns (`Columns`: job_plan keeps them, no dict), other
                   temps from dicts -- each loaded with addmany (repeated keys sum)
    the block:     process_BLOCK_<name>, overflow and string errors as the executors' blocks
    its temps out: `Columns` of the map's entries, which scatter / broadcast split as they are

The driver's views (`@ Local` maps: TPC-H Q22's CUSTOMER block adds its batch into
`NUMCUST_mCUSTOMERn`, its ORDERS block reads them) are resident there too
(`PartitionProgram.driver_views`), never loaded or cleared around a block: a block writing one
runs with the native undo log on, whose records stay until the step ends (`commit_views`) or
fails anywhere (`rollback_views`: replayed backwards); `read_view` / `replace_views` serve
read_map, results and checkpoints. Where they cannot be (an exchange of a driver view, or a
block the llvm codegen refuses: `PartitionProgram.driver_python` says why) they stay
IndexedMaps and their blocks the generated Python, named by --explain (`explain_driver`). A
Python block reading a `Columns` temp gets it as a dict (`as_dicts`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toaster.dist.ir import Exchange, Local, delta_map_name, map_names


@dataclass(frozen=True)
class DriverBlock:
    """A local block the driver runs in its JIT of the partition program."""
    block: str          # its name: the entry point
    reads: tuple        # block-level maps loaded before it runs (batch, gathered and other temps)
    writes: tuple       # the temps it writes (read back as Columns)
    fresh: tuple        # the temps it starts empty
    scratch: tuple      # its scratch maps, as the partition program names them (cleared first)
    delta: str | None = None    # its trigger's batch map (DELTA_R), when it reads it
    # the batch columns it reads (None: every column loads); the others are never interned:
    # one constant when the block is linear in its batch, else net rows numbered in `surrogate`
    columns: tuple | None = None
    linear: bool = False
    surrogate: int | None = None
    # it writes a driver view (resident, so in neither `reads` nor `writes`): run with the undo
    # log on, undone if the step fails
    writes_views: bool = False


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


def local_views(prog) -> tuple:
    """The driver's views: the program's `@ Local` maps."""
    return tuple(m.name for m in prog.maps if m.kind == "view" and isinstance(m.tag, Local))


def driver_views_refused(prog, local) -> str | None:
    """Why the driver's views `local` cannot be resident in the driver's JIT (they then stay
    IndexedMaps, their blocks Python), or None: an exchange reads or writes one."""
    for trig in prog.triggers:
        for b in trig.blocks:
            for x in b.items if b.mode == "exchange" else ():
                if x.source in local or x.target in local:
                    return f"{x.kind} of driver view {x.source if x.source in local else x.target}"
    return None


def driver_blocks(prog, lowered: dict, inputs: dict, views: tuple = ()) -> tuple[dict, frozenset]:
    """(block name -> DriverBlock, relations whose batch may reach the driver as columns):
    the local blocks other than input blocks that write only temps and `views` (the driver's
    views resident in its JIT) and read no other view; a relation is columnar
    when it has such a block and every block reading its batch is one (or its input block),
    and no exchange reads the batch itself."""
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
                      and all(tags[w].kind == "temp" or w in views for w in writes)
                      and all(tags[r].kind == "temp" or r in views for r in reads if r in tags))
            if native:
                out[code.name] = DriverBlock(code.name, tuple(m for m in code.params if m not in views),
                                             tuple(w for w in writes if w not in views), tuple(code.fresh),
                                             tuple(f"{code.name}__{s}" for s in code.scratch),
                                             delta if delta in code.params else None,
                                             *_batch_columns(prog, trig, b, code, delta),
                                             writes_views=any(w in views for w in writes))
                has_driver = True
            elif delta in reads and code.name not in input_names:
                readers_ok = False
        if delta is not None and readers_ok and has_driver:
            columnar.add(trig.event.relation)
    return out, frozenset(columnar)


def _batch_columns(prog, trig, block, code, delta) -> tuple:
    """(columns, linear, surrogate) of driver block `block`'s batch: the positions of the
    columns it reads (None: every column), whether every statement reading the batch is linear
    in it (native_input.linear_in: rows that differ only in a column it does not read may then
    be summed), and for a block that is not, an unread int or float column that will hold each
    net row's number instead of its value (no such column: every column loads). A column is
    unread when the block's loops never use it (native_input._columns_read) or when, in the
    calculus, every variable the batch binds there occurs nowhere else in its scope
    (`_unread_in_calculus`: TPC-H Q4's L_COMMENT, which its code copies into a group map)."""
    from toaster.backends.spark.native_input import _columns_read, linear_in
    if delta is None or delta not in code.params:
        return None, False, None
    rel = trig.event.relation
    decl = next(r for r in prog.relations if r.name == rel)
    stmts = [it.stmt for it in block.items if delta in map_names(it.stmt.rhs)]
    unread = _unread_in_calculus([s.rhs for s in stmts], rel, len(decl.columns))
    columns = tuple(j for j in _columns_read(code.body, delta, len(decl.columns)) if j not in unread)
    if all(linear_in(s.rhs, rel) for s in stmts):
        return columns, True, None
    numbered = [j for j, c in enumerate(decl.columns) if j not in columns and str(c.type) in ("int", "float")]
    return (columns, False, numbered[0]) if numbered else (None, False, None)


def _unread_in_calculus(exprs, rel: str, arity: int) -> set:
    """Positions j of batch `rel` whose value no expression uses: at every occurrence of the
    batch, its variable at j is summed out by an enclosing AggSum (not in its group) in whose
    body it occurs only there (no comparison, value, join or group reads it). A variable free at
    the statement (a target key) or occurring twice in its scope is read."""
    from toaster.calculus import ir as C
    unread = set(range(arity))

    def count(node, name: str) -> int:
        if isinstance(node, C.Var):
            return node.name == name
        if isinstance(node, tuple):
            return sum(count(x, name) for x in node)
        if hasattr(node, "__dataclass_fields__"):
            return sum(count(getattr(node, f), name) for f in node.__dataclass_fields__)
        return 0

    def walk(node, scopes):
        if isinstance(node, C.DeltaRel) and node.name == rel:
            for j, v in enumerate(node.vars):
                scope = next((a for a in reversed(scopes) if v.name not in {g.name for g in a.group}), None)
                if scope is None or count(scope.expr, v.name) != 1 or \
                        count(getattr(scope, "term", ()), v.name):
                    unread.discard(j)
            return
        if isinstance(node, (C.AggSum, C.Extremum)):
            scopes = scopes + [node]
        if isinstance(node, tuple):
            for x in node:
                walk(x, scopes)
        elif hasattr(node, "__dataclass_fields__"):
            for f in node.__dataclass_fields__:
                walk(getattr(node, f), scopes)
    for e in exprs:
        walk(e, [])
    return unread


def net_rows(delta, columns, surrogate: int, key_types):
    """(key columns, multiplicities) of a batch for a block not linear in it: its net rows (equal
    rows summed over every column, zero sums dropped; Arrow's hash group-by, no Python per row),
    with the `columns` the block reads as they are, column `surrogate` (never read) holding the
    row's number -- so rows that differ only in unread columns stay apart, as the block needs --
    and the other unread columns one constant: their strings are not interned."""
    import pyarrow as pa
    from toaster.backends.spark.native_input import table_columns
    from toaster.runtime.batch import Batch
    batch = delta.batches[0] if len(delta.batches) == 1 else Batch.concat(delta.batches)
    arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(c)) for c in batch.columns]
    names = [f"c{j}" for j in range(len(arrays))]
    grouped = pa.table(arrays + [pa.array(np.asarray(batch.signs, np.int64))], names=names + ["s"]) \
        .group_by(names, use_threads=False).aggregate([("s", "sum")])
    sums = grouped.column("s_sum").to_numpy()
    keep = np.flatnonzero(sums != 0)
    kept = [grouped.column(f"c{j}").take(pa.array(keep)) for j in columns]
    n = len(keep)
    row_ids = np.arange(n, dtype=np.int64 if key_types[surrogate] == "int" else np.float64)
    table = pa.table(kept + [pa.array(row_ids), pa.array(sums[keep])],
                     names=[f"c{j}" for j in columns] + [f"c{surrogate}", "s"])
    return table_columns(table, key_types)


def _load(nm, name: str, value, types: dict, db: DriverBlock | None = None) -> None:
    """Load driver map `name` from its value; the batch of driver block `db` (a ColumnarDelta)
    with only the columns the block reads (the others one constant or, for a block not linear
    in it, net rows numbered: net_rows), so no string of an unread column is interned."""
    from toaster.backends.spark import native, native_input
    if isinstance(value, native_input.ColumnarDelta):
        key_types = types[name][0]
        if db is not None and db.columns is not None and not db.linear:
            nm.add(name, [net_rows(value, db.columns, db.surrogate, key_types)] if len(value) else ())
            return
        columns = db.columns if db is not None and db.columns is not None else range(len(key_types))
        data = value.slices(1, columns)[0]
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
    """The closure run_local runs (now or after the job) for driver block `db` of runtime `rt`.
    A block writing a driver view runs with the undo log on; its records stay until the step
    ends (`commit_views`) or fails (`rollback_views`)."""
    def run():
        nm = rt._driver_module()
        types = nm.pp.map_types
        for m in db.reads:
            if m not in db.fresh:
                _load(nm, m, rt.local.get(m, {}), types, db if m == db.delta else None)
        for m in db.fresh + db.scratch:
            nm.add(m, ())
        nm.log(db.writes_views, trim=False)
        try:
            nm.run_block(db.block)
        finally:
            nm.log(False, trim=False)
        for w in db.writes:
            rt.local[w] = Columns([nm.entries(w)])
        for m in set(db.reads) | set(db.writes):
            nm.add(m, ())              # the driver's copies are not kept (a Gather may be a whole view)
    return run


# ------------------------------------------------------------------ the driver's views
def resident_views(rt) -> tuple:
    """The driver views runtime `rt` keeps in its driver JIT (none: IndexedMaps in rt.local)."""
    return rt.native.driver_views if rt.native is not None else ()


def commit_views(rt) -> None:
    """The step succeeded: drop the undo records of the driver views."""
    if resident_views(rt) and rt._driver_loaded():
        rt._driver_module().log(False)


def rollback_views(rt) -> None:
    """The step failed: every driver view gets its value from before the step."""
    if resident_views(rt) and rt._driver_loaded():
        rt._driver_module().rollback()


def read_view(rt, name: str) -> dict:
    """{key: value} of a resident driver view's nonzero entries (none before any block wrote one:
    the driver's program is not compiled for a read)."""
    from toaster.backends.spark.native import column_items
    if not rt._driver_loaded():
        return {}
    cols, vals = rt._driver_module().entries(name)
    return dict(column_items(cols, vals))


def replace_views(rt, tables: dict) -> None:
    """The resident driver views become `tables` (name -> {key: value}), outside any step."""
    from toaster.backends.spark import native
    nm = rt._driver_module()
    for n in resident_views(rt):
        nm.replace(n, *native.dict_columns({k: v for k, v in tables[n].items() if v != 0},
                                           nm.pp.map_types[n]))


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


def explain_driver(program) -> list:
    """--explain lines: which local blocks run natively on the driver, which are Python and why,
    and where the driver's views live."""
    pp = program.native
    inputs = {ib.block for ib in pp.inputs.values()}
    python = [c.name for c in program.blocks if c.mode == "local" and c.name not in pp.driver
              and c.name not in inputs]
    lines = []
    if pp.driver:
        lines.append(f"driver local blocks: native code in the driver's own JIT (input and driver blocks) "
                     f"({len(pp.driver)}: {', '.join(pp.driver)})")
    if pp.driver_views:
        lines.append(f"driver views (@ Local): resident in the driver's JIT, undone by its native undo log "
                     f"if a step fails ({len(pp.driver_views)}: {', '.join(pp.driver_views)})")
    if python:
        why = pp.driver_python or "not native"
        lines.append(f"driver local blocks: Python functions over IndexedMaps ({len(python)}: "
                     f"{', '.join(python)}; {why})")
    return lines
