"""Driver-side runtime of generated PySpark programs (base class of the generated `Program`).

State: Local maps are driver dicts (`self.local`); Dist maps are RDDs with exactly one dict per
partition (`self.dist`), persisted (MEMORY_AND_DISK) and replaced by new RDDs after each batch.
Exchanges: Scatter = split a driver dict by partition + parallelize; Repart = partitionBy on the
hash of the partition key + one merged dict per partition; Gather = collect + merge on the driver.
A dist block zips the co-partitioned RDDs it reads and maps the generated per-partition function
over them. Each batch ends with one job materializing the new map versions (checkpointed every
`checkpoint_every` batches so lineage stays short); the old versions are then unpersisted.
Durability is Spark's: lost partitions are recomputed from lineage or the last checkpoint.
"""
from __future__ import annotations

import csv
import functools
import operator
import sys
import tempfile

from pyspark import StorageLevel

from toaster.backends.spark import worker

_registered = False


def register_worker_by_value() -> None:
    """Ship the worker helpers inside the pickled closures (workers need no toaster install)."""
    global _registered
    if not _registered:
        from pyspark import cloudpickle
        cloudpickle.register_pickle_by_value(worker)
        _registered = True


class DistRuntime:
    LOCAL_MAPS: tuple = ()       # view maps on the driver
    DIST_MAPS: dict = {}         # view map -> partition key positions
    TRIGGERS: dict = {}          # relation -> name of its batch trigger method
    RELATION_TYPES: dict = {}    # relation -> column type names (for run_main)

    def __init__(self, sc, partitions: int | None = None, checkpoint_every: int = 0,
                 checkpoint_dir: str | None = None):
        register_worker_by_value()
        self.sc = sc
        self.partitions = int(partitions or sc.defaultParallelism)
        self.checkpoint_every = checkpoint_every
        if checkpoint_every and sc.getCheckpointDir() is None:
            sc.setCheckpointDir(checkpoint_dir or tempfile.mkdtemp(prefix="toaster-spark-ckpt-"))
        self.batches = 0
        self.local = {n: {} for n in self.LOCAL_MAPS}
        self.dist = {n: self._persist(self._empty()) for n in self.DIST_MAPS}
        self._reset_trigger_state()

    # ------------------------------------------------------------- plumbing
    def _reset_trigger_state(self):
        self._drop: list = []        # RDDs to unpersist once the batch is materialized
        self._written: set = set()   # views given a new version in this batch

    def _empty(self):
        return self.sc.parallelize([{} for _ in range(self.partitions)], self.partitions)

    @staticmethod
    def _persist(rdd):
        return rdd.persist(StorageLevel.MEMORY_AND_DISK)

    def _set_dist(self, name: str, rdd) -> None:
        old = self.dist.get(name)
        if old is not None:
            self._drop.append(old)
        self.dist[name] = rdd
        if name in self.DIST_MAPS:
            self._written.add(name)

    # ------------------------------------------------------------ triggers
    def begin_trigger(self, delta_name: str, delta: dict) -> None:
        self.local[delta_name] = delta

    def end_trigger(self, temps: tuple) -> None:
        self.batches += 1
        fresh = [self.dist[n] for n in sorted(self._written)]
        if self.checkpoint_every and self.batches % self.checkpoint_every == 0:
            stale = [self.dist[n] for n in self.DIST_MAPS if not self.dist[n].isCheckpointed()]
            for r in stale:
                r.checkpoint()
            fresh += [r for r in stale if r not in fresh]
        if fresh:
            self.sc.union(fresh).count()   # one job: compute, cache (and checkpoint) the new versions
        for t in temps:
            self.local.pop(t, None)
            r = self.dist.pop(t, None)
            if r is not None:
                self._drop.append(r)
        for r in self._drop:
            r.unpersist()
        self._reset_trigger_state()

    # ------------------------------------------------------------ exchanges
    def scatter(self, target: str, source: str, parts: tuple) -> None:
        buckets = worker.split_by_partition(self.local[source], parts, self.partitions)
        self._set_dist(target, self._persist(self.sc.parallelize(buckets, self.partitions)))

    def repart(self, target: str, source: str, parts: tuple) -> None:
        rdd = (self.dist[source].flatMap(worker.dict_items)
               .partitionBy(self.partitions, functools.partial(worker.key_partition, positions=parts))
               .mapPartitions(worker.one_dict))
        self._set_dist(target, self._persist(rdd))

    def gather(self, target: str, source: str) -> None:
        dicts = self.dist[source].collect()
        self.local[target] = worker.merge_entries(kv for d in dicts for kv in d.items())

    # ---------------------------------------------------------- dist blocks
    def run_dist(self, fn, params: tuple, writes: tuple) -> None:
        rdds = [self.dist[p] for p in params]
        zipped = rdds[0].map(worker.singleton_tuple)
        for r in rdds[1:]:
            zipped = zipped.zip(r).map(worker.append_to_tuple)
        out = self._persist(zipped.map(lambda ds: fn(*ds)))
        self._drop.append(out)
        for i, name in enumerate(writes):
            self._set_dist(name, self._persist(out.map(operator.itemgetter(i))))

    # -------------------------------------------------------------- reading
    def read_map(self, name: str) -> dict:
        if name in self.local:
            return {k: v for k, v in self.local[name].items() if v != 0}
        if name in self.dist:
            out = {}
            for d in self.dist[name].collect():
                for k, v in d.items():
                    if v != 0:
                        out[k] = v
            return out
        raise KeyError(name)

    def apply_delta(self, relation: str, delta: dict) -> None:
        method = self.TRIGGERS.get(relation)
        if method is not None and delta:
            getattr(self, method)(delta)

    def close(self) -> None:
        for r in self.dist.values():
            r.unpersist()
        self.dist = {}


_PARSE = {"int": int, "date": lambda s: int(s.replace("-", "")), "float": float, "string": str,
          "bool": lambda s: s.strip().lower() in ("1", "true", "t")}


def run_main(program_cls, argv=None) -> None:
    """`spark-submit prog.py REL=file.csv ...`: each file is one batch of inserts (a leading
    column of +1/-1 signs when the file has one column more than the relation)."""
    from toaster.backends.spark.session import get_spark
    argv = sys.argv[1:] if argv is None else argv
    prog = program_cls(get_spark().sparkContext)
    for arg in argv:
        rel, _, path = arg.partition("=")
        rel = rel.upper()
        types = program_cls.RELATION_TYPES[rel]
        delta = {}
        with open(path, newline="") as f:
            for row in csv.reader(f):
                sign = 1
                if len(row) == len(types) + 1:
                    sign, row = int(row[0]), row[1:]
                key = tuple(_PARSE[t](v) for t, v in zip(types, row))
                delta[key] = delta.get(key, 0) + sign
        prog.apply_delta(rel, {k: v for k, v in delta.items() if v != 0})
    for name in program_cls.LOCAL_MAPS + tuple(program_cls.DIST_MAPS):
        print(name, sorted(prog.read_map(name).items()))
