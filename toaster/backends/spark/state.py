"""Executor-resident views with a versioned durable copy (runs inside Spark's Python workers).

Standard library only; pickled by value with the generated program (like worker.py).

Every distributed view is split into P partitions. The partition `(view, p)` lives as an
`IndexedMap` in the memory of the Python worker processes that ran a task for `p` (a
*replica*, kept in a module registered in `sys.modules`, so it outlives the task). Each replica
carries the sequence number of the last stage it reflects. The driver numbers every stage it
runs (`seq`) and tells each task, per view, which version it must see: the last committed
writer `want`, the snapshot `snap` and the committed write seqs since it (`logs`). The durable
copy, in a directory every executor reaches, is that history:

    ROOT/VIEW/p/snap-SEQ     the whole partition (written every checkpoint interval)
    ROOT/VIEW/p/delta-SEQ    the entries stage SEQ changed ({key: new value or None}, cleared?)

A task takes its replica if it is at a committed version not after `want` and replays the
missing deltas (O(batch) each); otherwise (a new or restarted process, a retried or
re-executed task, a failed batch) it rebuilds from the snapshot and the deltas. It updates the
replica in place, then writes its delta atomically (a retry rewrites the same file). So a
result never depends on which process ran which task: Spark schedules, retries and recovers;
this module only decides what a process may reuse.
"""
from __future__ import annotations

import os
import pickle
import shutil
import sys
from collections import OrderedDict

from toaster.backends.spark.worker import IndexedMap, key_partition

_REGISTRY = "_toaster_spark_state"
_MAX_STORES = 4          # engines whose replicas a process keeps (least recently used go)


def drain(elements) -> None:
    """Read a task's input to its end. PySpark's worker exits after a task that left input
    unread (pyspark/worker.py: no END_OF_STREAM), which loses this process's replicas and
    native programs and makes the next task fork a new worker: every task must drain."""
    for _ in elements:
        pass


class Replica:
    __slots__ = ("seq", "map")

    def __init__(self, seq: int, m: IndexedMap):
        self.seq = seq
        self.map = m


def _stores() -> OrderedDict:
    mod = sys.modules.get(_REGISTRY)
    if mod is None:
        mod = type(sys)(_REGISTRY)
        mod.stores = OrderedDict()
        sys.modules[_REGISTRY] = mod
    return mod.stores


def _replicas(store: str) -> dict:
    stores = _stores()
    reps = stores.get(store)
    if reps is None:
        reps = stores[store] = {}
        while len(stores) > _MAX_STORES:
            stores.popitem(last=False)
    stores.move_to_end(store)
    return reps


# ------------------------------------------------------------------ files
class _LocalFS:
    def read(self, path: str):
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)                      # atomic: readers see old or new, never half

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)


class _ArrowFS:
    """hdfs://, s3a://, ... through pyarrow.fs (needed on the executors for such URLs)."""

    def __init__(self, root: str):
        from pyarrow import fs
        self.fs, _ = fs.FileSystem.from_uri(root.replace("s3a://", "s3://", 1))

    @staticmethod
    def _path(path: str) -> str:
        return path.split("://", 1)[1].split("/", 1)[1] if "://" in path else path

    def read(self, path: str):
        try:
            with self.fs.open_input_stream(self._path(path)) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, path: str, data: bytes) -> None:
        tmp = f"{self._path(path)}.tmp-{os.getpid()}"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, self._path(path))

    def remove(self, path: str) -> None:
        try:
            self.fs.delete_file(self._path(path))
        except FileNotFoundError:
            pass

    def remove_tree(self, path: str) -> None:
        try:
            self.fs.delete_dir(self._path(path))
        except (FileNotFoundError, OSError):
            pass


def filesystem(root: str):
    if root.startswith("file://"):
        return _LocalFS(), root[len("file://"):]
    if "://" in root:
        return _ArrowFS(root), root
    return _LocalFS(), root


def remove_tree(root: str) -> None:
    """Delete a store's whole directory (best effort: called on the driver)."""
    fs, path = filesystem(root)
    fs.remove_tree(path)


def _delta_path(root, view, p, seq):
    return f"{root}/{view}/{p}/delta-{seq:012d}"


def _snap_path(root, view, p, seq):
    return f"{root}/{view}/{p}/snap-{seq:012d}"


# --------------------------------------------------------------- versions
def checkout(root: str, store: str, view: str, p: int, version: tuple) -> Replica:
    """The replica of (view, p) as of version = (want, snap, logs), caught up or rebuilt."""
    want, snap, logs = version
    fs, root = filesystem(root)
    reps = _replicas(store)
    rep = reps.get((view, p))
    if rep is None or rep.seq > want or not (rep.seq == snap or rep.seq in logs):
        data = fs.read(_snap_path(root, view, p, snap)) if snap else None
        rep = Replica(snap, IndexedMap(pickle.loads(data) if data else {}))
        reps[(view, p)] = rep
    m = rep.map
    for seq in logs:
        if rep.seq < seq <= want:
            data = fs.read(_delta_path(root, view, p, seq))
            if data is None:
                raise RuntimeError(f"toaster: delta {seq} of {view}[{p}] missing under {root}")
            cleared, items = pickle.loads(data)
            if cleared:
                m.clear()
            for k, v in items:
                if v is None:
                    m.pop(k, None)
                else:
                    m[k] = v
    rep.seq = want
    return rep


def begin_update(rep: Replica) -> None:
    rep.seq = -1                    # dirty until committed: a failure leaves it unusable
    rep.map.touched = set()
    rep.map.cleared = False


def commit(root: str, store: str, view: str, p: int, seq: int, rep: Replica) -> None:
    m = rep.map
    items = [(k, m.get(k)) for k in m.touched]
    fs, root = filesystem(root)
    fs.write(_delta_path(root, view, p, seq), pickle.dumps((m.cleared, items), protocol=pickle.HIGHEST_PROTOCOL))
    m.touched = None
    m.cleared = False
    rep.seq = seq


# ------------------------------------------------------------------ tasks
def stage_task(spec: dict):
    """mapPartitionsWithIndex body of one stage. Input: (dest, [(map, key, value), ...])
    elements; output the same, dest = the partition of the next stage or -1 for the driver."""
    root, store, seq, parts_n = spec["root"], spec["store"], spec["seq"], spec["partitions"]

    def run(p, elements):
        temps, out = {}, {}
        for dest, recs in elements:
            if dest < 0:                  # gathered by an earlier stage: on its way to the driver
                out.setdefault(-1, []).extend(recs)
                continue
            for name, k, v in recs:
                d = temps.get(name)
                if d is None:
                    d = temps[name] = {}
                d[k] = d.get(k, 0) + v
        for d in temps.values():
            for k in [k for k, v in d.items() if v == 0]:
                del d[k]
        views = {v: checkout(root, store, v, p, ver) for v, ver in spec["views"].items()}
        for v in spec["updates"]:
            begin_update(views[v])
        for fn, params, writes in spec["blocks"]:
            args = [views[n].map if n in views else temps.setdefault(n, {}) for n in params]
            for n, m in zip(writes, fn(*args)):
                if n not in views:
                    temps[n] = m
        for v in spec["updates"]:
            commit(root, store, v, p, seq, views[v])

        def source(n):
            return views[n].map if n in views else temps.get(n, {})

        for target, src, positions in spec["reparts"]:
            for k, v in source(src).items():
                out.setdefault(key_partition(k, positions) % parts_n, []).append((target, k, v))
        for target, src in spec["gathers"]:
            out.setdefault(-1, []).extend((target, k, v) for k, v in source(src).items())
        carry = temps if spec["carry"] is None else spec["carry"]      # None: every temp held
        for n in carry:
            out.setdefault(p, []).extend((n, k, v) for k, v in temps.get(n, {}).items())
        return iter(out.items())
    return run


def read_task(root: str, store: str, view: str, version: tuple):
    def run(p, elements):
        drain(elements)
        return iter(list(checkout(root, store, view, p, version).map.items()))
    return run


def read_views_task(root: str, store: str, versions: dict):
    """Every view's entries in partition p as (view, key, value) records (a checkpoint)."""
    def run(p, elements):
        drain(elements)
        out = []
        for view, version in versions.items():
            out.extend((view, k, v) for k, v in checkout(root, store, view, p, version).map.items())
        return iter(out)
    return run


def restore_task(root: str, store: str, seq: int, old_store: str):
    """Install restored entries: input (p, {view: entries}) for this partition; each view's
    partition becomes the snapshot `seq` of the new store and its replica here. The old
    store's replicas in this process are dropped (a cache: its durable copy is untouched)."""
    def run(p, elements):
        fs, froot = filesystem(root)
        reps = _replicas(store)
        for q, views in elements:
            if q != p:
                raise RuntimeError(f"toaster: restore data of partition {q} reached partition {p}")
            for view, entries in views.items():
                fs.write(_snap_path(froot, view, p, seq), pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL))
                reps[(view, p)] = Replica(seq, IndexedMap(entries))
        _stores().pop(old_store, None)
        return iter(())
    return run


def snapshot_task(root: str, store: str, versions: dict):
    """Write every view's partition as of its version, then drop the history it replaces."""
    def run(p, elements):
        drain(elements)
        fs, froot = filesystem(root)
        for view, (want, snap, logs) in versions.items():
            rep = checkout(root, store, view, p, (want, snap, logs))
            fs.write(_snap_path(froot, view, p, want), pickle.dumps(dict(rep.map), protocol=pickle.HIGHEST_PROTOCOL))
            for seq in logs:
                if seq <= want:
                    fs.remove(_delta_path(froot, view, p, seq))
            if snap and snap != want:
                fs.remove(_snap_path(froot, view, p, snap))
            rep.seq = want
        return iter(())
    return run


def drop_task(store: str):
    def run(_p, elements):
        drain(elements)
        _stores().pop(store, None)
        return iter(())
    return run
