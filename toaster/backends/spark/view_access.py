"""The views of a driver runtime (DistRuntime's mixin): reading them, snapshots, replacing them.

The distributed views are read by one job over their executor replicas (state.py /
native_state.py); the driver's views (`@ Local`) are IndexedMaps in `self.local`, or, with native
driver blocks, resident in the driver's JIT of its program (native_driver.resident_views).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from toaster.backends.spark import native, native_driver, native_exec, native_state, state, worker
from toaster.backends.spark.worker import IndexedMap


@dataclass
class _ViewLog:
    last: int = 0            # seq of the last stage that wrote the view (committed)
    snap: int = 0            # seq of its snapshot (0: empty)
    logs: list = field(default_factory=list)   # committed write seqs after the snapshot

    def version(self) -> tuple:
        return (self.last, self.snap, tuple(self.logs))


def _per_partition(first, others):
    """A task running `first` in partition 0 and `others` elsewhere."""
    def run(p, elements):
        return (first if p == 0 else others)(p, elements)
    return run


class ViewAccess:
    """Mixin of DistRuntime: read, snapshot and replace the program's views."""

    def snapshot(self) -> None:
        """One job: every partition writes its views as of now; the log before it is dropped."""
        versions = {v: log.version() for v, log in self.views.items() if log.logs}
        if not versions:
            return
        task = (native_state.snapshot_task(self._spec({}), versions) if self.native is not None
                else state.snapshot_task(self.root, self.store, versions))
        self.sc.parallelize(range(self.partitions), self.partitions).mapPartitionsWithIndex(task).collect()
        for v in versions:
            log = self.views[v]
            log.snap, log.logs = log.last, []

    # -------------------------------------------------------------- reading
    def read_map(self, name: str) -> dict:
        if name in native_driver.resident_views(self):
            return native_driver.read_view(self, name)
        if name in self.local:
            return {k: v for k, v in self.local[name].items() if v != 0}
        if name in self.views:
            return self.read_maps([name])[name]
        raise KeyError(name)

    def read_maps(self, names) -> dict:
        """Nonzero entries of several maps: the distributed ones collected in ONE job."""
        driver = native_driver.resident_views(self)
        out = {n: native_driver.read_view(self, n) for n in names if n in driver}
        out.update({n: {k: v for k, v in self.local[n].items() if v != 0} for n in names if n in self.local})
        versions = {n: self.views[n].version() for n in names if n not in out and n in self.views}
        missing = [n for n in names if n not in out and n not in self.views]
        if missing:
            raise KeyError(missing[0])
        if versions:
            for n in versions:
                out[n] = {}
            # a replicated view is whole in every partition: read from partition 0 only
            rest = {n: v for n, v in versions.items() if self.DIST_MAPS.get(n) != ()}
            read = (lambda vs: native_state.read_views_task(self._spec({}), vs)) if self.native is not None \
                else (lambda vs: state.read_views_task(self.root, self.store, vs))
            task = read(versions) if len(rest) == len(versions) else _per_partition(read(versions), read(rest))
            rdd = self.sc.parallelize(range(self.partitions), self.partitions).mapPartitionsWithIndex(task)
            for n, k, v in self._records(rdd.collect()):
                if v != 0:
                    out[n][k] = v
        return {n: out[n] for n in names}

    def replace_state(self, tables: dict) -> None:
        """Replace every view by `tables` (name -> {key: value}; all views present; a view's
        copies, VIEW_COPIES, get its entries, split by their own partitioning).

        One job writes each partition's new entries as the snapshot of a fresh store (its own
        directory under the base, its own replica namespace) and installs them as replicas; only
        when it succeeded does the driver switch to the new store, so a failed restore leaves
        the engine as it was, and a later rebuild (a lost executor) reads the restored state,
        never the old store, which is then deleted."""
        seq = self.seq + 1
        store = uuid.uuid4().hex
        root = f"{self.base}/{store}"
        P = self.partitions
        buckets = [{} for _ in range(P)]
        tables = {**tables, **{c: tables[v] for c, v in self.VIEW_COPIES.items() if v in tables}}
        for v, parts in self.DIST_MAPS.items():
            if self.native is not None:
                cols, vals = native.dict_columns({k: x for k, x in tables[v].items() if x != 0},
                                                 self.native.map_types[v])
                for p in range(P):
                    buckets[p][v] = (cols, vals) if parts == () else ([c[:0] for c in cols], vals[:0])
                if parts != ():
                    for p, c, x in native_state._split(cols, vals, parts, P):
                        buckets[p][v] = (c, x)
                continue
            if parts == ():          # replicated: every partition holds all of it
                for p in range(P):
                    buckets[p][v] = {k: x for k, x in tables[v].items() if x != 0}
                continue
            for p, b in enumerate(worker.split_by_partition(tables[v], parts, P)):
                buckets[p][v] = b
        if self.native is not None:
            spec = dict(self._spec({}), root=root, store=store)
            task = native_state.restore_task(spec, seq, self.store)
        else:
            task = state.restore_task(root, store, seq, self.store)
        try:
            self.sc.parallelize(list(enumerate(buckets)), P).mapPartitionsWithIndex(task).collect()
        except BaseException:
            state.remove_tree(root)
            raise
        old_root, old_store = self.root, self.store
        self.store, self.root, self.seq = store, root, seq
        self.views = {v: _ViewLog(last=seq, snap=seq) for v in self.DIST_MAPS}
        for n in self.LOCAL_MAPS:
            if n in self.local:
                self.local[n] = IndexedMap({k: v for k, v in tables[n].items() if v != 0})
        if native_driver.resident_views(self):      # the driver's JIT: the new store's map set
            native_driver.replace_views(self, tables)
            native_exec.drop_store(f"{old_store}-driver")
        state.remove_tree(old_root)          # the old history: nothing refers to it now
