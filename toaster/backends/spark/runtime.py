"""Driver-side runtime of generated PySpark programs (base class of the generated `Program`).

State (docs/spark-engine.md): Local maps are driver dicts (`self.local`; views as IndexedMaps, or
resident in the driver's JIT with native driver blocks: native_driver.py);
Dist views are executor-resident, versioned, with a durable copy under `checkpoint_dir`
(state.py). The driver holds no RDD of state, so no lineage grows from batch to batch.

A batch trigger's `scatter / repart / gather / run_dist` calls only plan. The dist blocks between
two exchanges form a stage; the triggers of all relations of one batch (`apply_deltas`) plan
into the same stages, in order, and the plan runs as ONE Spark job at the end of the batch
(job_plan.py builds and runs it):

    parallelize(P buckets of the scattered records)           (the batch's slice for each partition;
                                                              with input blocks, P row ranges of the
                                                              batch's columns -> stage 0 -> partitionBy:
                                                              native_input.py)
      -> mapPartitionsWithIndex(stage 1)  -> partitionBy(P)   (all Reparts of one block: one shuffle)
      -> mapPartitionsWithIndex(stage 2)  -> ... -> collect()  (the Gathered records only)

Local blocks run on the driver as they are reached (`run_local`), unless they read a map a
planned Gather fills, or do not commute with a block already waiting: those wait for the job and
run after it, in program order. Only a Scatter of a map such a waiting block writes (or a Gather
fills) needs the job's result before the plan can go on: then the batch takes a second job.

Dist blocks run as native code by default (BLOCKS = 'native': native.py, native_state.py; the
records are then (dest, [(map, key columns, values), ...])), or as the pygen functions.
Records are (dest, [(map, key, value), ...]); a stage carries the temps a later stage of the
same job reads (a later trigger's scattered batch rides along from the first stage). Per-batch
work is O(batch): tasks update their partition's views in place and log the changed entries;
every `checkpoint_every` triggers one more job snapshots the views and
drops the log they replace. A batch that fails anywhere (an integer overflow, a failed job, the
second job of a two-job batch) is undone as a whole, every relation of it: the views' versions
go back to those before it, so executors rebuild them from the durable copy, and the driver's
views give back the values they had (the native undo log of the driver's JIT where they are
resident there, native_driver.py; else IndexedMap.undo).
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field

from toaster.backends.spark import native_driver, native_input, native_state, state, worker
from toaster.backends.spark.job_plan import JobRunner
from toaster.backends.spark.view_access import ViewAccess, _ViewLog
from toaster.backends.spark.submit import run_main  # noqa: F401  (generated programs import it from here)
from toaster.backends.spark.worker import IndexedMap

_registered = False


def register_worker_by_value() -> None:
    """Ship the worker helpers inside the pickled closures (workers need no toaster install)."""
    global _registered
    if not _registered:
        from pyspark import cloudpickle
        cloudpickle.register_pickle_by_value(worker)
        cloudpickle.register_pickle_by_value(state)
        _registered = True


@dataclass
class _Stage:
    blocks: list = field(default_factory=list)      # (fn, params, writes)
    reparts: list = field(default_factory=list)     # (target, source, positions)
    gathers: list = field(default_factory=list)     # (target, source)

    def exchanges(self):
        """(reads, writes) of its Reparts and Gathers: they read their source after the stage's
        blocks, and their target exists only from the next stage on."""
        for target, source, *_ in self.reparts + self.gathers:
            yield {source}, {target}


class DistRuntime(JobRunner, ViewAccess):
    LOCAL_MAPS: tuple = ()       # view maps on the driver
    DIST_MAPS: dict = {}         # view map -> partition key positions; () = replicated (every partition holds it all)
    TRIGGERS: dict = {}          # relation -> name of its batch trigger method
    SPREAD_BLOCKS: tuple = ()    # dist blocks indifferent to their input's partitioning (stage 0 may run them)
    READY: str | None = None     # the ON SYSTEM READY method (initial values), run once by start()
    RELATION_TYPES: dict = {}    # relation -> column type names (for run_main)
    MAP_TYPES: dict = {}         # view map -> ((key type names), value type name), program order
    VIEW_COPIES: dict = {}       # a view kept a second time, partitioned otherwise -> the view it copies
    BLOCKS: str = "python"       # how dist blocks run: 'native' (native.py) or 'python' (pygen)
    _stages = None               # the planned, not yet run, stages (None outside a runtime)
    _inputs: tuple | list = ()   # input blocks planned for the executors (none outside a runtime)
    native = None                # the partition program when dist blocks run natively
    last_job_plan = None         # the RDD the last job collected

    def __init__(self, sc, partitions: int | None = None, checkpoint_every: int = 50,
                 checkpoint_dir: str | None = None, native=None, native_opt: int = 1):
        register_worker_by_value()
        self.sc = sc
        # native blocks: the partition program (native.py), broadcast once, JIT'd by executors
        if self.BLOCKS == "native" and native is None:
            from toaster.errors import UnsupportedError
            raise UnsupportedError("a program generated with native blocks needs its partition program "
                                   "(SparkEngine passes it; dist_to_spark{blocks=python} for a standalone program)")
        self.native = native if self.BLOCKS == "native" else None
        if self.native is not None:
            from toaster.backends.llvm.strings import COLLECT_MIN
            # collect_min: the string pools' threshold (native_exec.module_for sets it; tests lower it)
            self._native_spec = {"native": sc.broadcast(native), "native_key": native.key,
                                 "native_opt": native_opt, "collect_min": COLLECT_MIN}
        self.partitions = int(partitions or sc.defaultParallelism)
        self.checkpoint_every = checkpoint_every
        self.store = uuid.uuid4().hex
        self._own_dir = checkpoint_dir is None
        self.base = (checkpoint_dir or tempfile.mkdtemp(prefix="toaster-spark-state-")).rstrip("/")
        self.root = f"{self.base}/{self.store}"
        self.batches = 0
        self.seq = 0
        self.jobs_last_batch = 0
        self.stages_last_batch = 0   # Spark stages the batch's jobs planned (snapshot jobs not included)
        # the driver's views: IndexedMaps, or resident in the driver's JIT (native_driver.py)
        self.local = {n: IndexedMap() for n in self.LOCAL_MAPS if n not in native_driver.resident_views(self)}
        self.views = {n: _ViewLog() for n in self.DIST_MAPS}
        self._batch = None
        # input blocks the executors run on their slice of a batch (native_input.py), by delta map
        self._input_by_delta = {i.delta: i for i in (self.native.inputs if self.native is not None else {}).values()}
        self._reset_plan()

    def _reset_plan(self):
        self._stages: list = []
        self._scattered = [[] for _ in range(self.partitions)]   # records for the next job's first stage
        self._carried = None         # RDD from an earlier job of this batch, still to be shuffled
        self._persisted: list = []
        self._deferred: list = []    # (fn, reads, writes): local blocks waiting for the job
        self._inputs: list = []      # [InputBlock, ColumnarDelta, scatters, trigger ended]: stage 0's work
        self._input_temps: dict = {}     # temp an input block fills -> its entry in _inputs
        self._floor = (0, 0)         # the current trigger's earliest stage for its next (block, exchange)

    # ------------------------------------------------------------ planning
    def _place(self, floor: int, reads: set, writes: set, exchange: bool) -> _Stage:
        """The earliest stage, from `floor` on, where an item of the current trigger may run
        without changing what any planned item sees (Spark's fixed cost is per stage, so a later
        trigger's block joins an earlier stage when it commutes with everything planned after
        it). Within a stage, blocks run in planning order and then its exchanges: a block may
        follow a block it conflicts with in the same stage, but not precede an exchange that
        reads what it writes, and an exchange reads its source after every block of its stage."""
        lowest = floor
        for t in range(floor, len(self._stages)):
            st = self._stages[t]
            for _, params, w in st.blocks:
                if _conflict(reads, writes, set(params), set(w)):
                    lowest = max(lowest, t)
            if not exchange:
                for r, w in st.exchanges():
                    if _conflict(reads, writes, r, w):
                        lowest = max(lowest, t + 1)
        while len(self._stages) <= lowest:
            self._stages.append(_Stage())
        return lowest

    def _job_clock(self) -> int:
        return last_job_id(self.sc)

    def begin_batch(self) -> None:
        """Start a batch: the triggers run until end_batch plan into one job."""
        self._batch = {"job0": self._job_clock(), "triggers0": self.batches, "temps": [], "stages": 0,
                       # what a failed batch goes back to: the views' versions (the driver's
                       # views keep their old values in IndexedMap.undo or the native undo log)
                       "before": {v: (log.last, log.snap, list(log.logs)) for v, log in self.views.items()}}
        for n in self._python_views():
            self.local[n].undo = {}

    def begin_trigger(self, delta_name: str, delta: dict) -> None:
        if self._batch is None:        # a trigger called on its own is a batch of one relation
            self.begin_batch()
            self._batch["single"] = True
        self.local[delta_name] = delta
        self._floor = (0, 0)

    def _abort_batch(self) -> None:
        """Undo a batch that failed: executors rebuild the views at their versions from before
        it (state.checkout); the driver's views get their old values back."""
        if self._batch is None:        # failed after the batch was applied (its snapshot)
            return
        for v, (last, snap, logs) in self._batch["before"].items():
            log = self.views[v]
            log.last, log.snap, log.logs = last, snap, logs
        for n in self._python_views():
            self.local[n].rollback()
        native_driver.rollback_views(self)
        for n in [n for n in self.local if n not in self.LOCAL_MAPS]:
            del self.local[n]                 # the batch's deltas and temps
        for r in self._persisted:
            r.unpersist()
        self._reset_plan()
        self._batch = None

    def _end_undo(self) -> None:
        for n in self._python_views():
            self.local[n].undo = None

    def _python_views(self) -> list:
        """The driver's views kept as IndexedMaps (not resident in the driver's JIT)."""
        return [n for n in self.LOCAL_MAPS if n in self.local]

    def run_local(self, fn, reads: tuple, writes: tuple, block: str | None = None) -> None:
        """Run a local block now, or, if it needs the job's result or must stay after a block
        that waits for it, when the job has run; natively when it is a driver block."""
        reads, writes = set(reads), set(writes)
        self._close_inputs()
        db = self.native.driver.get(block) if self.native is not None else None
        fn = native_driver.runner(self, db) if db is not None else native_driver.as_dicts(self, reads, fn)
        columnar = {r for r in reads if isinstance(self.local.get(r), native_input.ColumnarDelta)}
        if columnar and db is None:       # the batch's rows are read by the executors, not here
            ib = self._input_by_delta.get(next(iter(columnar)))
            if ib is None or reads != {ib.delta} or writes != set(ib.writes) or self._stages is None:
                raise AssertionError(f"a local block reads the columnar batch {sorted(columnar)}")
            entry = [ib, self.local[ib.delta], [], False]
            self._inputs.append(entry)
            self._input_temps.update((w, entry) for w in writes)
            return
        if self._stages is None:          # outside a runtime (a simulation): in order
            fn()
        elif reads & self._pending_gathers() or any(
                w & reads or r & writes or w & writes for _, r, w in self._deferred):
            self._deferred.append((fn, reads, writes))
        else:
            fn()

    def _pending_gathers(self) -> set:
        return {g[0] for st in self._stages for g in st.gathers}

    def scatter(self, target: str, source: str, parts: tuple) -> None:
        if source in self._input_temps:     # filled by an input block in the executors (stage 0)
            self._input_temps[source][2].append((target, source, tuple(parts)))
            return
        if source in self._pending_gathers() or any(source in w for _, _, w in self._deferred):
            self._flush(more=True)        # the data to scatter comes from the job: a second job
        if self.native is not None:        # columns, placed by the one partition function
            cols, vals = native_driver.columns_of(self.local[source], self.native.map_types[target])
            for p, c, v in native_state._split(cols, vals, parts, self.partitions):
                self._scattered[p].append((target, c, v))
            return
        buckets = worker.split_by_partition(self.local[source], parts, self.partitions)
        for p, b in enumerate(buckets):
            self._scattered[p].extend((target, k, v) for k, v in b.items())

    def broadcast(self, target: str, source: str, parts: tuple = ()) -> None:
        """Every partition gets all of a driver map (a small batch aggregate that updates a
        replicated view or joins a view where it lies): it rides in each task's stage-0 payload."""
        if source in self._input_temps:     # an input block's temp: filled natively on the driver
            self._input_temps[source][2].append((target, source, None))      # None: every partition
            return
        if source in self._pending_gathers() or any(source in w for _, _, w in self._deferred):
            self._flush(more=True)
        if self.native is not None:
            cols, vals = native_driver.columns_of(self.local[source], self.native.map_types[target])
            for p in range(self.partitions):
                self._scattered[p].append((target, cols, vals))
            return
        entries = dict(self.local[source].items())
        for p in range(self.partitions):
            self._scattered[p].extend((target, k, v) for k, v in entries.items())

    def _close_inputs(self) -> None:
        """The planned input blocks have all their Scatters (those are in the exchange block right
        after the input block, beside its Reparts and Gathers; the next block, local or dist, or
        the trigger's end closes them): the next job runs them in its stage 0."""
        for entry in self._inputs:
            entry[3] = True
        self._input_temps = {}

    def repart(self, target: str, source: str, parts: tuple) -> None:
        t = self._place(self._floor[1], {source}, {target}, exchange=True)
        self._stages[t].reparts.append((target, source, tuple(parts)))
        self._floor = (t + 1, t)        # the trigger's next block reads the target: a stage later

    def gather(self, target: str, source: str) -> None:
        t = self._place(self._floor[1], {source}, {target}, exchange=True)
        self._stages[t].gathers.append((target, source))
        self._floor = (t + 1, t)

    def run_dist(self, fn, params: tuple, writes: tuple) -> None:
        self._close_inputs()
        t = self._place(self._floor[0], set(params), set(writes), exchange=False)
        self._stages[t].blocks.append((fn, tuple(params), tuple(writes)))
        self._floor = (t, t)

    def sync(self, more: bool = True) -> None:
        """Run what is planned (programs generated before run_local call it before the local
        blocks that read a Gather). more=False: no dist work follows in this batch."""
        self._close_inputs()
        self._flush(more)

    def _flush(self, more: bool) -> None:
        """Run the planned stages as one job (the gathered maps land in self.local), then the
        local blocks that waited for it, in order."""
        if self._stages or any(e[3] for e in self._inputs):
            self._run_job(more_follow=more)
            self._floor = (0, 0)      # what the job computed feeds the next job's first stage
        waiting, self._deferred = self._deferred, []
        for fn, _, _ in waiting:
            fn()

    def end_trigger(self, temps: tuple) -> None:
        self._close_inputs()
        self._batch["temps"].extend(temps)
        self.batches += 1
        if self._batch.get("single"):
            self.end_batch()

    def end_batch(self) -> None:
        """Run the batch's job and the local blocks waiting for it; drop its deltas and temps;
        snapshot when a multiple of `checkpoint_every` triggers was passed."""
        try:
            self._flush(more=False)
        finally:
            for r in self._persisted:
                r.unpersist()
            self._reset_plan()
        batch, self._batch = self._batch, None    # applied: a failing snapshot must not undo it
        for t in batch["temps"]:
            self.local.pop(t, None)
        self._end_undo()
        native_driver.commit_views(self)
        self.stages_last_batch = batch["stages"]
        k = self.checkpoint_every
        if k and self.batches // k > batch["triggers0"] // k:
            self.snapshot()
        self.jobs_last_batch = self._job_clock() - batch["job0"]      # the snapshot's included

    def start(self) -> None:
        """Load the partition program in the executors' Python workers (one job: a worker JITs
        it or loads its machine code once, so the first batch does not pay it), then set the
        initial values (ON SYSTEM READY) before any batch: driver-side constants. The job has
        a batch's shape (native_state.warm_up)."""
        if self.native is not None:
            native_state.warm_up(self.sc, self._spec({}), self.partitions)
            if self.native.driver_program is not None or any(i.on_driver for i in self.native.inputs.values()):
                self._driver_module()   # JIT the driver's program now: Q17's first batch paid ~170 ms
        if self.READY:
            self._run_batch([(self.READY, {})])

    def apply_delta(self, relation: str, delta: dict) -> None:
        """Run the relation's batch trigger; if it fails, the batch is undone (_abort_batch)."""
        self.apply_deltas([(relation, delta)])

    def apply_deltas(self, deltas) -> None:
        """One batch over several relations: (relation, delta) pairs, their triggers run in this
        order (each sees the earlier ones' updates) and planned into one job. If anything
        fails, no view changes: the whole batch is undone."""
        merged: dict = {}
        for r, d in deltas:
            if isinstance(d, native_input.ColumnarDelta) or isinstance(merged.get(r), native_input.ColumnarDelta):
                merged[r] = native_input.ColumnarDelta.merged(merged.get(r), d)
            elif r in merged:         # a relation twice: one trigger over the sum (the views are a
                acc = merged[r]     # function of the database, which the order does not change)
                for k, v in d.items():
                    x = acc.get(k, 0) + v
                    if x:
                        acc[k] = x
                    else:
                        acc.pop(k, None)
            else:
                merged[r] = dict(d)
        present = [r for r, d in merged.items() if d and r in self.TRIGGERS]
        columnar = frozenset(r for r in present if isinstance(merged[r], native_input.ColumnarDelta))
        todo = [(self.TRIGGERS[r], merged[r]) for r in self._trigger_order(present, columnar)]
        if todo:
            self._run_batch(todo)

    def _trigger_order(self, relations: list, columnar: frozenset) -> list:
        """The order the step's triggers run in: the one planning the fewest jobs, then stages
        (best_order; cached per set of relations). Any order gives the same views after the step
        (they are a function of the database), but not the same plan: TPC-H Q3 with LINEITEM
        first leaves no first stage that runs in stage 0 (job_plan._driver_inputs)."""
        if len(relations) < 2 or len(relations) > 5:
            return relations
        key = (frozenset(relations), columnar)
        cache = self.__dict__.setdefault("_orders", {})
        if key not in cache:
            inputs = {r: ib for r, ib in self.native.inputs.items() if r in columnar} if self.native is not None else {}
            cache[key] = best_order(type(self), relations, inputs)
        return list(cache[key])

    def _run_batch(self, calls) -> None:
        """Run trigger methods (name, delta) as one batch: one plan, undone whole if it fails."""
        self.begin_batch()
        try:
            for method, delta in calls:
                getattr(self, method)(delta)
            self.end_batch()
        except BaseException:
            self._abort_batch()
            raise
        finally:
            self._end_undo()

    def close(self) -> None:
        """Drop the replicas (best effort: processes that run no task here keep theirs until
        evicted) and a state directory this runtime made itself."""
        try:
            drop = native_state.drop_task if self.native is not None else state.drop_task
            self.sc.parallelize(range(self.partitions), self.partitions).mapPartitionsWithIndex(
                drop(self.store)).collect()
            if self.native is not None:
                self._native_spec["native"].destroy()     # the broadcast partition program
                from toaster.backends.spark import native_exec
                native_exec.drop_store(f"{self.store}-driver")    # job_plan._driver_module's maps
        except Exception:        # the session may be gone already
            pass
        if self._own_dir and "://" not in self.root:
            shutil.rmtree(os.path.dirname(self.root), ignore_errors=True)


def _conflict(r1: set, w1: set, r2: set, w2: set) -> bool:
    """Whether two items touching these maps do not commute."""
    return bool(w1 & (r2 | w2) or r1 & w2)


class _DryRun:
    """Mixed in before a generated Program: plans batches without Spark, counting the jobs and
    stages the real runtime would run (the decisions depend on the program, not the data)."""

    def __init__(self, partitions: int = 2, inputs: dict | None = None):
        self.partitions, self.checkpoint_every = partitions, 0
        self._input_by_delta = {i.delta: i for i in (inputs or {}).values()}
        self.root = self.store = ""
        self.batches = self.seq = self.jobs_last_batch = self.stages_last_batch = 0
        self.local = {n: IndexedMap() for n in self.LOCAL_MAPS}
        self.views = {n: _ViewLog() for n in self.DIST_MAPS}
        self._batch, self._jobs = None, 0
        self.moved_inputs = []       # relations whose input block the plan runs on the driver
        self._reset_plan()

    def _job_clock(self) -> int:
        return self._jobs

    def _run_job(self, more_follow: bool) -> None:
        self._jobs += 1
        inputs = self._take_inputs()
        moved = self._driver_inputs(inputs, more_follow)
        self.moved_inputs.extend(e[0].relation for e in moved)
        inputs = [e for e in inputs if not any(e is m for m in moved)]
        self._batch["stages"] += (len(self._stages) + (self._carried is not None or bool(inputs))
                                  - bool(self._lead_in_stage0(inputs, more_follow)))
        for t in self._pending_gathers():
            self.local[t] = {}
        self._carried = True if more_follow else None
        self._stages, self._scattered = [], [[] for _ in range(self.partitions)]


def best_order(program_cls, relations, inputs: dict | None = None) -> tuple:
    """The order of `relations`' triggers in one step that plans the fewest (jobs, stages), then
    moves the fewest input blocks to the driver; the first such permutation of the sorted names
    (deterministic whatever order the step came in)."""
    def cost(order):
        prog = _dry_run(program_cls, order, inputs or {})
        return prog.jobs_last_batch, prog.stages_last_batch, len(prog.moved_inputs)
    return min(itertools.permutations(sorted(relations)), key=cost)


def planned_counts(program_cls, relations, inputs: dict | None = None) -> tuple[int, int]:
    """(jobs, Spark stages) one batch over `relations` runs (in the order apply_deltas runs
    them: best_order), not counting the periodic snapshot job. `inputs`: relation -> InputBlock
    read by the executors (columnar)."""
    inputs = inputs or {}
    order = relations if len(relations) < 2 or len(relations) > 5 else best_order(program_cls, relations, inputs)
    return _dry_counts(program_cls, order, inputs)


def driver_inputs(program_cls, relations, inputs: dict | None = None) -> list:
    """The relations of a step over `relations` whose input block runs on the driver
    (job_plan._driver_inputs), in the order apply_deltas runs them."""
    inputs = inputs or {}
    order = relations if len(relations) < 2 or len(relations) > 5 else best_order(program_cls, relations, inputs)
    return _dry_run(program_cls, order, inputs).moved_inputs


def _dry_counts(program_cls, relations, inputs: dict) -> tuple[int, int]:
    prog = _dry_run(program_cls, relations, inputs)
    return prog.jobs_last_batch, prog.stages_last_batch


def _dry_run(program_cls, relations, inputs: dict):
    prog = type("DryRun", (_DryRun, program_cls), {})(inputs=inputs)
    prog.begin_batch()
    for r in relations:
        getattr(prog, prog.TRIGGERS[r])(native_input.ColumnarDelta([]) if r in inputs else {})
    prog.end_batch()
    return prog


def last_job_id(sc) -> int:
    """Spark numbers jobs in order: the difference of the largest id counts the jobs run. Read as
    the DAG scheduler's next job id (one py4j call on a cached handle: a batch reads it twice,
    and each py4j round trip is wall time of the batch); where that accessor is missing, the max
    of the status tracker's ids, taken in the JVM."""
    dag = getattr(sc, "_toaster_dag", None)
    if dag is None:
        try:
            dag = sc._jsc.sc().dagScheduler()
            dag.nextJobId()
        except Exception:        # not this Spark's internals: the public status tracker
            dag = False
        sc._toaster_dag = dag
    if dag is not False:
        return dag.nextJobId() - 1
    ids = sc.statusTracker()._jtracker.getJobIdsForGroup(None)
    return sc._jvm.java.util.Arrays.stream(ids).max().orElse(-1)
