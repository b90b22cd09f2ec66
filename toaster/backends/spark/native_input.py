"""Batch input read by the executors (issue 10 item 4): no row of a batch becomes a Python object
on the driver.

Most batch triggers start with an *input block*: a local block that reads only the batch
(`DELTA_R`) and pre-aggregates it into temps that the trigger only Scatters (dist_blocks'
`TMP_k[V] := AggSum(V, Q)`, Hot Dog's pre-aggregation before a shuffle). When that block is
*linear* in the batch (every statement a sum over the batch's rows, no batch inside a Lift, a
comparison or a nested aggregate, no constant term), the block's result over a batch is the
sum of its results over any split of the batch's rows into slices. Such a block is compiled
into the partition program (an entry point like a dist block's), and a batch of R then runs as:

    driver:   the batch's columns, cut into P row ranges (no hashing, no Python per row),
              each an Arrow IPC stream                        -> parallelize (P slices)
    stage 0:  each task loads its slice into DELTA_R (addmany: repeated rows sum), runs the
              input block natively, splits the temps by the Scatter's key positions (the one
              partition function)                             -> partitionBy(P)
    stage 1+: the trigger's dist blocks, as before (the incoming temps of one map are summed)

one Spark job per batch as before, one stage more. Rows whose net multiplicity is 0 across
slices cancel in the sums (linearity); within a slice the native loop skips zero entries.
Triggers whose first block is not such a block (it also writes a driver view, its temps are
read on the driver, it is not linear) keep the driver path; `--explain` names the relations
read each way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toaster.backends.spark.input_arrow import columns_of, compile_plan, run_plan
from toaster.calculus import ir as C
from toaster.dist.ir import Exchange, delta_map_name, map_names


@dataclass(frozen=True)
class InputBlock:
    """The input block of relation `relation`'s trigger, run by the executors on their slice."""
    relation: str
    block: str          # the block's name (its entry point in the partition program)
    delta: str          # DELTA_<relation>
    writes: tuple       # the temps it fills (each only Scattered by the trigger)
    columns: tuple = ()     # the batch's column positions it reads (the others never travel)
    plan: tuple | None = None   # input_arrow's plan of the block (None: it runs natively)
    broadcast: bool = False     # a temp it fills is Broadcast: it runs on the driver (run_on_driver)
    nonlinear: bool = False     # not a sum over the batch's rows: on the driver, over the whole batch

    @property
    def on_driver(self) -> bool:
        """Whether the block always runs on the driver (job_plan._driver_inputs), natively."""
        return self.broadcast or self.nonlinear


# ------------------------------------------------------------------ compile time
def _has_delta(e, delta: str) -> bool:
    if isinstance(e, C.DeltaRel):
        return e.name == delta
    if isinstance(e, tuple):
        return any(_has_delta(x, delta) for x in e)
    if hasattr(e, "__dataclass_fields__"):
        return any(_has_delta(getattr(e, f), delta) for f in e.__dataclass_fields__)
    return False


def linear_in(e, delta: str) -> bool:
    """True when `e` is a sum over the rows of the batch of relation `delta` (so it distributes over any
    split of the batch): the batch occurs once along every product, never under a Lift, a
    comparison, a value or a nested MIN/MAX, and every summand reads it."""
    match e:
        case C.DeltaRel(name, _):
            return name == delta
        case C.Sum(terms):
            return all(linear_in(t, delta) for t in terms)
        case C.Prod(factors):
            with_delta = [f for f in factors if _has_delta(f, delta)]
            return len(with_delta) == 1 and linear_in(with_delta[0], delta)
        case C.AggSum(_, expr):
            return linear_in(expr, delta)
        case _:
            return False


def input_blocks(prog, lowered: dict) -> dict:
    """relation -> InputBlock for every trigger whose first block may run in the executors
    (`lowered`: id(block) -> BlockCode, codegen's)."""
    tags = prog.tags()
    out = {}
    for trig in prog.triggers:
        if trig.event.kind != "batch" or not trig.blocks or trig.blocks[0].mode != "local":
            continue
        rel = trig.event.relation
        delta = delta_map_name(rel)
        first = trig.blocks[0]
        code = lowered[id(first)]
        stmts = [it.stmt for it in first.items]
        writes = tuple(dict.fromkeys(s.target for s in stmts))
        if code.params != (delta,) or set(code.fresh) != set(writes) or \
                any(tags[w].kind != "temp" for w in writes):
            continue
        if any(map_names(s.rhs) != {delta} for s in stmts):
            continue
        if _read_later(trig.blocks[1:], set(writes) | {delta}) or not _scattered_next(trig.blocks, set(writes)):
            continue
        decl = next(r for r in prog.relations if r.name == rel)
        # a block not linear in the batch (TPC-H Q7's NATION joined with itself) is not split: it
        # runs on the driver over the whole batch, every column travelling (merging rows that
        # differ in a column it does not read is sound for sums only)
        linear = all(linear_in(s.rhs, rel) for s in stmts)
        columns = (_columns_read(code.body, delta, len(decl.columns)) if linear
                   else tuple(range(len(decl.columns))))
        plan = compile_plan(stmts, decl, {w: tags[w].type for w in writes}) if linear else None
        if plan is not None and not columns_of(plan) <= set(columns):
            plan = None
        broadcast = any(isinstance(it, Exchange) and it.kind == "broadcast" and it.source in writes
                        for it in trig.blocks[1].items)
        out[rel] = InputBlock(rel, code.name, delta, writes, columns, plan, broadcast, not linear)
    return out


def _columns_read(body, delta: str, arity: int) -> tuple:
    """Positions of the batch's columns the block's code reads: a loop over the batch binds
    every column, but one whose variable the loop body never uses need not travel (the block
    is linear, so rows that differ only there may be summed together)."""
    from toaster.imperative.ir import ForEach, LocalRef, MapGet
    used: set = set()

    def refs(node, out):
        if isinstance(node, LocalRef):
            out.add(node.name)
        elif isinstance(node, tuple):
            for x in node:
                refs(x, out)
        elif hasattr(node, "__dataclass_fields__"):
            if isinstance(node, MapGet) and node.map == delta:
                used.update(range(arity))          # read by key: every column counts
            for f in node.__dataclass_fields__:
                refs(getattr(node, f), out)

    def walk(node):
        if isinstance(node, ForEach) and node.map == delta:
            names: set = set()
            refs(node.body, names)
            for i, (pat, var) in enumerate(zip(node.pattern, node.key_vars)):
                if pat is not None or (var is not None and var.name in names):
                    used.add(i)
            walk(node.body)
        elif isinstance(node, tuple):
            for x in node:
                walk(x)
        elif hasattr(node, "__dataclass_fields__"):
            if isinstance(node, MapGet) and node.map == delta:
                used.update(range(arity))
            for f in node.__dataclass_fields__:
                walk(getattr(node, f))
    walk(body)
    return tuple(sorted(used))


def _scattered_next(blocks, temps: set) -> bool:
    """Whether every Scatter (or Broadcast) of the input block's temps is in the exchange block
    right after it (so the runtime sees them all before any other planning call)."""
    later = [it for b in blocks[2:] for it in b.items if isinstance(it, Exchange) and it.source in temps]
    return len(blocks) > 1 and blocks[1].mode == "exchange" and not later


def _read_later(blocks, names: set) -> bool:
    """Whether a later block reads one of `names` other than by a Scatter."""
    for b in blocks:
        for it in b.items:
            if isinstance(it, Exchange):
                if it.source in names and it.kind not in ("scatter", "broadcast"):
                    return True
            elif map_names(it.stmt.rhs) & names:
                return True
    return False


def _map_refs(e) -> set:
    """Names of every MapRef anywhere in `e` (comparisons and nested aggregates included)."""
    if isinstance(e, C.MapRef):
        return {e.name}
    if isinstance(e, tuple):
        return set().union(*(_map_refs(x) for x in e)) if e else set()
    if hasattr(e, "__dataclass_fields__"):
        out = set()
        for f in e.__dataclass_fields__:
            out |= _map_refs(getattr(e, f))
        return out
    return set()


def _linear_in_maps(e, names: set) -> bool:
    """linear_in with the maps `names` in place of the batch: every product reads exactly one of
    them, as a plain factor, and nothing else reads a map."""
    match e:
        case C.MapRef(name, _, _):
            return name in names
        case C.Sum(terms):
            return all(_linear_in_maps(t, names) for t in terms)
        case C.Prod(factors):
            with_map = [f for f in factors if _map_refs(f)]
            return len(with_map) == 1 and _linear_in_maps(with_map[0], names)
        case C.AggSum(_, expr):
            return _linear_in_maps(expr, names)
        case _:
            return False


def spread_blocks(prog, lowered: dict) -> tuple:
    """Names (`lowered`: id(block) -> BlockCode, codegen's) of the dist blocks whose result does not depend on how their input is partitioned
    (in the order codegen names blocks): every statement fills a Random temp by a sum linear in
    temps (no view read), and those Random temps are read only by exchanges (a Gather or Repart
    sums the partitions' partial results). The runtime may run such a block in stage 0's task p
    on the temps task p's batch slice produced, instead of shuffling them first
    (job_plan._lead_in_stage0: TPC-H Q6 is one stage per batch)."""
    from toaster.dist.ir import Random
    tags = prog.tags()
    read_by_stmts = set()
    for trig in prog.triggers:
        for b in trig.blocks:
            if b.mode != "exchange":
                for it in b.items:
                    read_by_stmts |= _map_refs(it.stmt.rhs)
    out = []
    for trig in prog.triggers:
        for b in trig.blocks:
            if b.mode != "dist":
                continue
            ok = True
            for it in b.items:
                st, target = it.stmt, tags.get(it.stmt.target)
                reads = _map_refs(st.rhs)
                if target is None or target.kind != "temp" or not isinstance(target.tag, Random) \
                        or st.target in read_by_stmts or not reads \
                        or any(tags[r].kind != "temp" for r in reads if r in tags) or not reads <= set(tags) \
                        or not _linear_in_maps(st.rhs, reads):
                    ok = False
                    break
            if ok:
                out.append(lowered[id(b)].name)
    return tuple(out)


# ------------------------------------------------------------------ driver
def batch_slices(batch, parts: int, columns) -> list:
    """The batch's `columns` cut into `parts` row ranges, each an Arrow IPC stream (columns
    c<position>.., signs s): vectorized, and sliced buffers are written truncated (only the
    range travels)."""
    import pyarrow as pa
    arrays = [batch.columns[j] if isinstance(batch.columns[j], (pa.Array, pa.ChunkedArray))
              else pa.array(np.asarray(batch.columns[j])) for j in columns]
    arrays.append(pa.array(np.asarray(batch.signs, np.int8)))      # +1 / -1: one byte travels
    table = pa.table(arrays, names=[f"c{j}" for j in columns] + ["s"])
    n = table.num_rows
    bounds = [n * p // parts for p in range(parts + 1)]
    out = []
    for p in range(parts):
        piece = table.slice(bounds[p], bounds[p + 1] - bounds[p])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, piece.schema) as w:
            w.write_table(piece)
        out.append(sink.getvalue().to_pybytes() if piece.num_rows else None)
    return out


class ColumnarDelta:
    """A relation's batch handed to the runtime as columns (not a dict of rows): its rows are
    read by the executors (input_task). Sized like a delta (a trigger runs when it has rows)."""
    __slots__ = ("batches",)

    def __init__(self, batches):
        self.batches = list(batches)

    def __len__(self) -> int:
        return sum(len(b) for b in self.batches)

    @staticmethod
    def merged(first, second) -> "ColumnarDelta":
        """One relation's batches given twice in one step: their rows together."""
        if not isinstance(second, ColumnarDelta) or not isinstance(first, (ColumnarDelta, type(None))):
            raise TypeError("a relation given both as columns and as a dict in one batch")
        if first is None:
            return second
        if type(first) is not ColumnarDelta or type(second) is not ColumnarDelta:
            from toaster.errors import UnsupportedError
            raise UnsupportedError("a relation given twice in one step, once as a DataFrame")
        return ColumnarDelta((first.batches if first is not None else []) + second.batches)

    def slices(self, parts: int, columns) -> list:
        from toaster.runtime.batch import Batch
        batch = self.batches[0] if len(self.batches) == 1 else Batch.concat(self.batches)
        return batch_slices(batch, parts, columns)


def stage0(sc, parts: int, scattered: list, inputs: list, spec: dict, lead=None, spread=(),
           lead_reads_records: bool = False):
    """The RDD of a job's stage 0: P tasks, each with the driver's scattered records of its
    partition and its slice of every input block's batch. `inputs`: the runtime's entries
    [InputBlock, ColumnarDelta, scatters, ready]. `lead`: the task of the job's first planned
    stage (job_plan: _lead_in_stage0), run by task p on partition p after the inputs; it
    receives the temps named in `spread` as task p produced them (not split by partition), or,
    with `lead_reads_records`, the records the driver scattered to partition p."""
    slices = {ib.block: delta.slices(parts, ib.columns) for ib, delta, _, _ in inputs}
    work = [(ib.block, ib.delta, ib.writes, scatters, ib.plan) for ib, _, scatters, _ in inputs]
    elements = [(p, (scattered[p], {b: s[p] for b, s in slices.items() if s[p] is not None}))
                for p in range(parts)]
    return sc.parallelize(elements, parts).mapPartitionsWithIndex(
        input_task(spec, work, lead, frozenset(spread), lead_reads_records))


def run_on_driver(get_nm, inputs: list, parts: int, scattered: list) -> None:
    """Run input blocks on the driver (`get_nm()`: the driver's own JIT of the partition program,
    asked for only when a block has no Arrow plan) over their whole batch and add their Scattered
    temps to `scattered` (per partition; a Broadcast temp to every partition), as records the
    driver scattered: what stage 0 would do, vectorized and native, without the shuffle after it
    (job_plan._driver_inputs: the broadcast batches, and the small batches whose temps the first
    stage reads). No Python per row: Arrow slices in, columns out."""
    out: dict = {}
    for ib, delta, scatters, _ in inputs:
        data = delta.slices(1, ib.columns)[0]
        if data is not None:
            run_input(get_nm, read_ipc(data), ib.block, ib.delta, scatters, parts, frozenset(), out, [], ib.plan)
    for d, recs in out.items():
        scattered[d].extend(recs)


# ------------------------------------------------------------------ executors
_FILL = {"string": "", "float": 0.0, "bool": False}


def _read_slice(data: bytes, key_types):
    """(key columns, signs) of a slice; a column that did not travel (the block does not read
    it) is one constant."""
    return table_columns(read_ipc(data), key_types)


def read_ipc(data: bytes):
    """A slice's Arrow table (columns c<position>.., signs s) from its IPC stream."""
    import pyarrow as pa
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def table_columns(table, key_types):
    """(key columns, signs) of a slice's Arrow table (columns c<position>.., signs s): a column
    it lacks is one constant (the strings as the string pool encodes them: Arrow arrays)."""
    import pyarrow as pa
    n = table.num_rows
    cols = []
    for j, t in enumerate(key_types):
        name = f"c{j}"
        if name not in table.column_names:
            fill = _FILL.get(t, 0)
            cols.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([""]))
                        if t == "string" else np.full(n, fill))
            continue
        col = table.column(name).combine_chunks()
        if t == "string":
            cols.append(col)                  # the string pool encodes Arrow arrays directly
        else:
            cols.append(col.to_numpy(zero_copy_only=False))
    return cols, table.column("s").to_numpy()


def run_input(get_nm, table, block: str, delta: str, scatters, parts_n: int, spread, out: dict,
              kept: list, plan=None) -> None:
    """One input block over one slice (an Arrow table: columns c<position>.., signs s): its
    temps split by their Scatters' partitions into `out` (dest -> records), or kept whole in
    `kept` when the lead stage's spread blocks read them. With a `plan` (input_arrow) the block
    is evaluated by Arrow over the slice's columns, else (or when an integer sum could overflow)
    by the native partition program (`get_nm()`)."""
    from toaster.backends.spark.native_state import _split
    result = None
    if plan is not None:
        result = run_plan(plan, table, table.column("s").to_numpy())
    if result is None:
        nm = get_nm()
        cols, signs = table_columns(table, nm.pp.map_types[delta][0])
        nm.add(delta, [(cols, signs)])
        for n in nm.pp.fresh[block]:
            nm.add(n, ())
        nm.run_block(block)
        result = {source: nm.entries(source) for _, source, _ in scatters}
        nm.add(delta, ())          # the slice is not kept
    for target, source, positions in scatters:
        kcols, vals = result[source]
        if not len(vals):
            continue
        if target in spread:   # read here by the lead stage's spread blocks
            kept.append((target, kcols, vals))
            continue
        if positions is None:  # a Broadcast (run_on_driver): every partition gets all of it
            for d in range(parts_n):
                out.setdefault(d, []).append((target, kcols, vals))
            continue
        for d, c, v in _split(kcols, vals, positions, parts_n):
            out.setdefault(d, []).append((target, c, v))


def input_task(spec: dict, inputs: list, lead=None, spread=frozenset(), lead_reads_records=False):
    """mapPartitionsWithIndex body of stage 0: elements (p, (records, {block: slice})); the
    records scattered by the driver pass on to partition p (or, `lead_reads_records`, into the
    lead stage), each input block runs on the slice and its temps go to the partitions of their
    Scatters. `inputs`: (block, delta, writes, scatters [(target, source, parts)])."""
    from toaster.backends.spark import native_exec as nx
    store, parts_n = spec["store"], spec["partitions"]

    def run(p, elements):
        out: dict = {}
        kept: list = []
        held = []

        def get_nm():          # the partition program, only when a block runs natively
            if not held:
                held.append(nx.module_for(spec))
                held[0].activate(store, p)
            return held[0]
        for q, (records, slices) in elements:
            if records:
                (kept if lead_reads_records else out.setdefault(q, [])).extend(records)
            for block, delta, writes, scatters, plan in inputs:
                data = slices.get(block)
                if data is None:
                    continue
                run_input(get_nm, read_ipc(data), block, delta, scatters, parts_n, spread, out, kept, plan)
        if lead is not None:
            for d, recs in lead(p, iter([(p, kept)] if kept else ())):
                out.setdefault(d, []).extend(recs)
        return iter(out.items())
    return run
