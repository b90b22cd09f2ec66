"""Native blocks: the Spark tasks (stage, read, snapshot, restore, drop) over native replicas.

The protocol is state.py's (versions: checkout / catch-up / rebuild / commit; a stage's replica
is dirty until its delta is written), with the native maps as the replica (native_exec.py) and a
columnar durable copy (Arrow IPC files, one table of key columns k0.. and values v):

    ROOT/VIEW/p/snap-SEQ.arrow    the whole partition
    ROOT/VIEW/p/delta-SEQ.arrow   the keys stage SEQ wrote with their new values (0: removed),
                                  read natively from the undo log's records (no scan of the map)

Records between stages: (dest, [(map, key columns, values), ...]); dest -1: to the driver.
"""
from __future__ import annotations

import numpy as np

from toaster.backends.spark import native_exec as nx
from toaster.backends.spark.native_hash import partitions_of
from toaster.backends.spark.state import drain, filesystem


def _delta_path(root, view, p, seq):
    return f"{root}/{view}/{p}/delta-{seq:012d}.arrow"


def _snap_path(root, view, p, seq):
    return f"{root}/{view}/{p}/snap-{seq:012d}.arrow"


def to_ipc(cols, vals) -> bytes:
    import pyarrow as pa
    arrays = {f"k{j}": pa.array(c) for j, c in enumerate(cols)}
    arrays["v"] = pa.array(vals)
    table = pa.table(arrays)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes):
    import pyarrow as pa
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    K = table.num_columns - 1
    cols = [table.column(f"k{j}").to_numpy() for j in range(K)]
    return cols, table.column("v").to_numpy()


def checkout(nm, part, fs, root, view: str, p: int, version: tuple) -> None:
    """The native replica of (view, p) as of version = (want, snap, logs), caught up or rebuilt."""
    want, snap, logs = version
    if view not in nm.specs:
        return                    # a view no dist block touches: never written here, empty
    seq = part.seqs.get(view)
    if seq is None or seq > want or not (seq == snap or seq in logs):
        data = fs.read(_snap_path(root, view, p, snap)) if snap else None
        if data is None and snap:
            raise RuntimeError(f"toaster: snapshot {snap} of {view}[{p}] missing under {root}")
        cols, vals = from_ipc(data) if data else ([], np.zeros(0))
        nm.replace(view, cols, vals)
        seq = snap
    for s in logs:
        if seq < s <= want:
            data = fs.read(_delta_path(root, view, p, s))
            if data is None:
                raise RuntimeError(f"toaster: delta {s} of {view}[{p}] missing under {root}")
            nm.set_entries(view, *from_ipc(data))
    part.seqs[view] = want


def _split(cols, vals, positions, parts_n):
    """(partition, cols, vals) per destination partition, by the one partition function."""
    if parts_n == 1:
        return [(0, cols, vals)]
    dest = partitions_of([cols[i] for i in positions], len(vals), parts_n)
    order = np.argsort(dest, kind="stable")
    bounds = np.searchsorted(dest[order], np.arange(parts_n + 1))
    out = []
    for q in range(parts_n):
        idx = order[bounds[q]:bounds[q + 1]]
        if len(idx):
            out.append((q, [c[idx] for c in cols], vals[idx]))
    return out


def _concat(chunks):
    cols = [np.concatenate([c[j] for c, _ in chunks]) for j in range(len(chunks[0][0]))]
    return cols, np.concatenate([v for _, v in chunks])


def stage_task(spec: dict):
    """mapPartitionsWithIndex body of one stage, the blocks run natively."""
    root, store, seq, parts_n = spec["root"], spec["store"], spec["seq"], spec["partitions"]

    def run(p, elements):
        nm = nx.module_for(spec)
        part = nm.activate(store, p)
        fs, froot = filesystem(root)
        incoming, out = {}, {}
        for dest, recs in elements:
            if dest < 0:                  # gathered by an earlier stage: on its way to the driver
                out.setdefault(-1, []).extend(recs)
                continue
            for name, cols, vals in recs:
                incoming.setdefault(name, []).append((cols, vals))
        for v, ver in spec["views"].items():
            checkout(nm, part, fs, froot, v, p, ver)
        for v in spec["updates"]:
            part.seqs[v] = -1             # dirty until its delta is written
        passing = {n: _concat(c) for n, c in incoming.items() if n not in nm.specs}
        temps = set(incoming)
        named = {n for _, params, writes in spec["blocks"] for n in params + writes}
        named |= {r[1] for r in spec["reparts"]} | {g[1] for g in spec["gathers"]}
        for n in named - set(spec["views"]) - set(incoming):
            if n in nm.specs and n not in nm.pp.views:
                nm.add(n, ())             # a temp this stage did not receive is empty
        for n, chunks in incoming.items():
            if n in nm.specs:
                nm.add(n, chunks)
        nm.log(True)
        try:
            for block, params, writes in spec["blocks"]:
                for n in nm.pp.fresh[block]:
                    nm.add(n, ())
                nm.run_block(block)
                temps |= {w for w in writes if w not in nm.pp.views}
            for v in spec["updates"]:
                data = to_ipc(*nm.touched(v))
                fs.write(_delta_path(froot, v, p, seq), data)
                part.seqs[v] = seq
        finally:
            nm.log(False)

        def source(n):
            if n in passing:
                return passing[n]
            return nm.entries(n) if n in nm.specs else ([], np.zeros(0, np.int64))

        for target, src, positions in spec["reparts"]:
            cols, vals = source(src)
            if len(vals):
                for q, c, v in _split(cols, vals, positions, parts_n):
                    out.setdefault(q, []).append((target, c, v))
        for target, src in spec["gathers"]:
            cols, vals = source(src)
            out.setdefault(-1, []).append((target, cols, vals))
        carry = temps if spec["carry"] is None else spec["carry"]      # None: every temp held
        for n in carry:
            if n in temps:
                cols, vals = source(n)
                if len(vals):
                    out.setdefault(p, []).append((n, cols, vals))
        return iter(out.items())
    return run


def read_views_task(spec: dict, versions: dict):
    """Every view's entries in partition p as (view, key columns, values) (reads, checkpoints)."""
    def run(p, elements):
        drain(elements)
        nm = nx.module_for(spec)
        part = nm.activate(spec["store"], p)
        fs, froot = filesystem(spec["root"])
        out = []
        for view, version in versions.items():
            checkout(nm, part, fs, froot, view, p, version)
            if view in nm.specs:
                out.append((view,) + tuple(nm.entries(view)))
        return iter(out)
    return run


def snapshot_task(spec: dict, versions: dict):
    """Write every view's partition as of its version, then drop the history it replaces."""
    def run(p, elements):
        drain(elements)
        nm = nx.module_for(spec)
        part = nm.activate(spec["store"], p)
        fs, froot = filesystem(spec["root"])
        for view, (want, snap, logs) in versions.items():
            checkout(nm, part, fs, froot, view, p, (want, snap, logs))
            fs.write(_snap_path(froot, view, p, want), to_ipc(*nm.entries(view)))
            for s in logs:
                if s <= want:
                    fs.remove(_delta_path(froot, view, p, s))
            if snap and snap != want:
                fs.remove(_snap_path(froot, view, p, snap))
        return iter(())
    return run


def restore_task(spec: dict, seq: int, old_store: str):
    """Install restored entries: input (p, {view: (cols, vals)}); each view's partition becomes
    the snapshot `seq` of the new store and its native replica here. The old store's map sets
    in this process are dropped (a cache: its durable copy is untouched)."""
    def run(p, elements):
        nx.drop_store(old_store)
        nm = nx.module_for(spec)
        part = nm.activate(spec["store"], p)
        fs, froot = filesystem(spec["root"])
        for q, views in elements:
            if q != p:
                raise RuntimeError(f"toaster: restore data of partition {q} reached partition {p}")
            for view, (cols, vals) in views.items():
                fs.write(_snap_path(froot, view, p, seq), to_ipc(cols, vals))
                if view in nm.specs:
                    nm.replace(view, cols, vals)
                    part.seqs[view] = seq
        return iter(())
    return run


def warm_arrow() -> None:
    """Run once what a batch first runs of Arrow in this process: the IPC writer and reader (the
    batch slices, the delta files) and a hash group-by (input_arrow's plans). Their first use
    costs ~50 ms a process (library initialization, kernel registration), which the first batch
    of an engine paid on the driver and in every task."""
    import pyarrow as pa
    cols, vals = from_ipc(to_ipc([np.zeros(1, np.int64)], np.ones(1)))
    pa.table({"k0": cols[0], "v0": vals}).group_by(["k0"], use_threads=False).aggregate([("v0", "sum")])
    pa.ipc.open_stream(pa.BufferReader(_ipc_stream(pa.table({"c0": cols[0]})))).read_all()


def _ipc_stream(table) -> bytes:
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _to_partition(dest: int) -> int:
    return dest


def warm_up(sc, spec: dict, parts: int) -> None:
    """The engine's warm-up job, shaped like a batch's (a stage, a shuffle, a stage, collect),
    and Arrow's first uses here: the JVM's shuffle path, the workers' shuffle code and the
    libraries' first calls cost the first batch ~300 ms otherwise (docs/spark-engine.md, "The
    first batch, and what a steady batch costs")."""
    warm = warm_task(spec)
    sc.parallelize(range(parts), parts).mapPartitionsWithIndex(warm).partitionBy(parts, _to_partition) \
        .mapPartitionsWithIndex(warm).collect()
    warm_arrow()


def warm_task(spec: dict):
    """Load the spec's partition program in the worker that runs the task (engine start), and
    the modules stage 0 reads batch slices with (pyarrow's IPC reader: ~60-200 ms to import,
    which the first batch paid), and run Arrow's first uses (warm_arrow). Its output is one
    record per partition, so the warm-up job shuffles as a batch's job does (runtime.start)."""
    def run(p, elements):
        drain(elements)
        nx.module_for(spec)
        from toaster.backends.spark import native_input  # noqa: F401
        warm_arrow()
        return iter([(q, ()) for q in range(spec["partitions"])])
    return run


def drop_task(store: str):
    def run(_p, elements):
        drain(elements)
        nx.drop_store(store)
        return iter(())
    return run


def compiles_task():
    """(process id, JITs, loads) of the worker that runs it (tests; native_exec.compiles / loads)."""
    def run(_p, elements):
        drain(elements)
        import os
        return iter([(os.getpid(), nx.compiles(), nx.loads())])
    return run


def pools_task():
    """(process id, native_exec.pool_sizes()) of the worker that runs it (tests, benches)."""
    def run(_p, elements):
        drain(elements)
        import os
        return iter([(os.getpid(), nx.pool_sizes())])
    return run
