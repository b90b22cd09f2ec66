"""Job execution of the driver runtime: the planned stages of a batch become ONE Spark job.

`DistRuntime` (runtime.py) plans: a batch's triggers call scatter / repart / gather / run_dist,
which fill `self._stages`, `self._scattered` and `self._inputs`. `JobRunner._run_job` turns that
plan into the job

    parallelize(P buckets of the scattered records)  or  stage 0 over P row ranges of the batch's
                                                         columns (native_input.py) -> partitionBy(P)
      -> mapPartitionsWithIndex(stage 1) -> partitionBy(P) -> ... -> collect()  (gathered records)

and folds the gathered records into the driver's maps. Each stage's spec carries the versions of
the views it reads (state.py / native_state.py check them out) and the seq its writes commit as.
"""
from __future__ import annotations

from toaster.backends.spark import native, native_driver, native_input, native_state, state
from toaster.backends.spark.frame_input import FrameDelta, frame_rdd


def _identity(dest: int) -> int:
    return dest


def _to_driver(element) -> bool:
    return element[0] < 0


def _to_workers(element) -> bool:
    return element[0] >= 0


def _payload(element):
    return element[1]


_RECORDS = "records"     # _lead_in_stage0: the lead stage reads the records the driver scattered


def _on_driver(entry) -> bool:
    """Whether an input entry [InputBlock, delta, scatters, ready] runs on the driver (natively,
    over Arrow): it Broadcasts a temp (the whole aggregate must reach every partition) or is not
    linear in the batch (it needs the whole batch at once)."""
    return entry[0].on_driver or any(positions is None for _, _, positions in entry[2])


class _Held:
    """The partition program where native_exec.module_for expects a broadcast (the driver's JIT)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class JobRunner:
    """Mixin of DistRuntime: specs of the planned stages, the job that runs them, stage 0 glue."""
    DRIVER_INPUT_ROWS = 50_000      # input rows the driver pre-aggregates in any case (_driver_inputs)

    def _specs(self, more_follow: bool) -> list:
        specs, logs = [], {}
        reads_after = [set() for _ in self._stages]
        for i in range(len(self._stages) - 2, -1, -1):
            nxt = self._stages[i + 1]
            reads_after[i] = (reads_after[i + 1] | {p for b in nxt.blocks for p in b[1]}
                              | {r[1] for r in nxt.reparts} | {g[1] for g in nxt.gathers})
        for i, st in enumerate(self._stages):
            self.seq += 1
            names = {p for b in st.blocks for p in b[1]} | {r[1] for r in st.reparts} | {g[1] for g in st.gathers}
            views = {v: self.views[v].version() for v in names if v in self.views}
            updates = sorted({w for b in st.blocks for w in b[2] if w in self.views})
            for v in updates:
                logs.setdefault(v, (self.views[v].last, list(self.views[v].logs)))
                self.views[v].last = self.seq
                self.views[v].logs.append(self.seq)
            if more_follow:         # the rest of the trigger is not planned yet: keep every temp
                carry = None
            else:
                carry = sorted(n for n in reads_after[i] if n not in self.views)
            specs.append(self._spec({"seq": self.seq, "views": views, "updates": updates,
                                     "blocks": st.blocks, "reparts": st.reparts, "gathers": st.gathers,
                                     "carry": carry}))
        self._undo = logs
        return specs

    def _spec(self, spec: dict) -> dict:
        spec.update(root=self.root, store=self.store, partitions=self.partitions)
        if self.native is not None:     # native blocks are named, not shipped as functions
            spec.update(self._native_spec)
            if "blocks" in spec:
                spec["blocks"] = [(fn.__name__, params, writes) for fn, params, writes in spec["blocks"]]
        return spec

    def _stage_task(self, spec):
        return (native_state if self.native is not None else state).stage_task(spec)

    def _records(self, collected):
        """(map, key, value) records of collected task output (native: columns)."""
        if self.native is None:
            return collected
        return ((name, k, v) for name, cols, vals in collected for k, v in native.column_items(cols, vals))

    def _run_job(self, more_follow: bool) -> None:
        P = self.partitions
        try:
            specs = self._specs(more_follow)
            inputs = self._take_inputs()
            moved = self._driver_inputs(inputs, more_follow)
            if moved:        # broadcast and small batches pre-aggregated here (Arrow or native code)
                native_input.run_on_driver(self._driver_module, moved, P, self._scattered)
                inputs = [e for e in inputs if not any(e is m for m in moved)]
            lead, spread = None, ()
            how = self._lead_in_stage0(inputs, more_follow)
            if how:          # the first planned stage runs in stage 0's tasks
                lead, specs = self._stage_task(specs[0]), specs[1:]
                spread = how if isinstance(how, frozenset) else ()
            frames = [e for e in inputs if isinstance(e[1], FrameDelta)]
            sliced = [e for e in inputs if not isinstance(e[1], FrameDelta)]
            if inputs:       # stage 0: the executors read their slices of the batches
                first = native_input.stage0(self.sc, P, self._scattered, sliced, self._spec({}), lead, spread,
                                            lead_reads_records=how == _RECORDS)
            else:
                first = self.sc.parallelize([(p, self._scattered[p]) for p in range(P)], P)
            if frames:       # and the DataFrames' partitions, pre-aggregated where they are read
                first = first.union(frame_rdd(frames, self._spec({}), P, self.sc))
            if self._carried is not None:
                first = self._carried.union(first).partitionBy(P, _identity)
            elif inputs and specs:      # (no stage left: stage 0's output is collected as it is)
                first = first.partitionBy(P, _identity)
            rdd = first
            self._batch["stages"] += len(specs) + (self._carried is not None or bool(inputs))
            for i, spec in enumerate(specs):
                if i:
                    rdd = rdd.partitionBy(P, _identity)
                rdd = rdd.mapPartitionsWithIndex(self._stage_task(spec))
            if more_follow:
                rdd = rdd.persist()
                self._persisted.append(rdd)
                self._carried = rdd.filter(_to_workers)
            final = rdd.filter(_to_driver).flatMap(_payload)
            self.last_job_plan = final          # its toDebugString() is the job's plan (tests)
            gathered = final.collect()
        except BaseException:
            for v, (last, logs) in self._undo.items():     # the failed stages never happened
                self.views[v].last, self.views[v].logs = last, logs
            raise
        targets = {g[0] for st in self._stages for g in st.gathers}
        if self.native is not None:     # the gathered columns as they came (native_driver.Columns)
            for t in targets:
                self.local[t] = native_driver.Columns()
            for name, cols, vals in gathered:
                self.local[name].chunks.append((cols, vals))
            gathered = ()
        else:
            for t in targets:
                self.local[t] = {}
        for name, k, v in self._records(gathered):
            d = self.local[name]
            x = d.get(k, 0) + v
            if x != 0:
                d[k] = x
            else:
                d.pop(k, None)
        self._stages = []
        self._scattered = [[] for _ in range(P)]

    def _lead_in_stage0(self, inputs: list, more_follow: bool = False):
        """Whether the job's first planned stage runs in stage 0's tasks (task p reads batch slice
        p), so the job has one stage less: true when it only moves views (no blocks, every
        Repart and Gather reads a view) and more stages follow (its work is done on view
        partition p); or, as the frozenset of the temps its blocks read, when its blocks are
        SPREAD_BLOCKS (native_input.spread_blocks) reading only temps this job's input blocks
        Scatter and read by nothing else, and its exchanges read only what they write or views:
        task p then runs them on the temps its own slice produced, which are not shuffled; or
        `_RECORDS` when nothing it reads comes from this job's input blocks (views and records
        the driver scattered, which task p holds for partition p: the input blocks' temps go
        straight to the next stage)."""
        if not inputs or self._carried is not None or not self._stages:
            return False
        st = self._stages[0]
        if not st.blocks:
            return len(self._stages) >= 2 and all(x[1] in self.views for x in st.reparts + st.gathers)
        if more_follow:           # the rest of the batch is not planned: who reads the temps is unknown
            return False
        scattered = {target for e in inputs for target, _, _ in e[2]}
        names = [b[0] if isinstance(b[0], str) else b[0].__name__ for b in st.blocks]
        reads = {p for _, params, writes in st.blocks for p in params if p not in writes}
        writes = {w for _, _, ws in st.blocks for w in ws}
        exchanged = {x[1] for x in st.reparts + st.gathers}
        if not ({p for _, ps, _ in st.blocks for p in ps} | exchanged) & scattered:
            return _RECORDS
        if any(isinstance(e[1], FrameDelta) for e in inputs):
            return False      # a DataFrame's temps come from its own tasks: they are shuffled
        if not names or any(n not in self.SPREAD_BLOCKS for n in names) or not reads <= scattered \
                or not all(x[1] in writes or x[1] in self.views for x in st.reparts + st.gathers):
            return False
        for later in self._stages[1:]:     # the spread temps and partial results stay in stage 0
            used = {p for b in later.blocks for p in b[1]} | {x[1] for x in later.reparts + later.gathers}
            if used & (reads | writes):
                return False
        return frozenset(reads)

    def _driver_inputs(self, inputs: list, more_follow: bool) -> list:
        """The input blocks to run on the driver (native_input.run_on_driver) instead of in stage
        0: those whose temps the first planned stage reads, when another input block's temps it
        does not read stay for the executors (TPC-H Q3: the CUSTOMER and ORDERS batches, ~20 %
        of a step, beside LINEITEM's). The first stage then reads only views and driver records,
        so it runs in stage 0's tasks (_lead_in_stage0: `_RECORDS`): one stage less per job.
        Unless the moved batches are larger than DRIVER_INPUT_ROWS and than the staying ones
        (TPC-H Q5 would move LINEITEM, ORDERS and CUSTOMER beside SUPPLIER): the driver runs them
        on one core, the executors on P. The dry run (--explain) has empty batches: it counts
        the moved case. An input block that Broadcasts a temp (TPC-H Q3's CUSTOMER) or is not
        linear in the batch (Q7's NATION) always runs on the driver (_on_driver)."""
        forced = [e for e in inputs if _on_driver(e)]
        inputs = [e for e in inputs if not _on_driver(e)]
        if more_follow or self._carried is not None or not self._stages \
                or len(inputs) < 2 or not self._stages[0].blocks:
            return forced
        st = self._stages[0]
        reads = {p for _, params, _ in st.blocks for p in params} | {x[1] for x in st.reparts + st.gathers}
        moved = [e for e in inputs if {target for target, _, _ in e[2]} & reads
                 and not isinstance(e[1], FrameDelta)]    # a DataFrame's rows never come here
        stay = [e for e in inputs if not any(e is m for m in moved)]
        if not moved or not stay or \
                sum(len(e[1]) for e in moved) > max(self.DRIVER_INPUT_ROWS, sum(len(e[1]) for e in stay)):
            return forced
        return forced + moved

    def _driver_module(self):
        """The driver's JIT of its program (the partition program's input blocks, and the driver
        blocks: PartitionProgram.driver_program), in its own store (the resident driver views)."""
        from toaster.backends.spark import native_exec as nx
        pp = self.native.driver_program or self.native
        # the driver's views live there: pinned, never evicted as the executors' caches are
        spec = {"native": _Held(pp), "native_key": pp.key, "pinned": bool(self.native.driver_views),
                "native_opt": self._native_spec["native_opt"], "store": f"{self.store}-driver",
                "collect_min": self._native_spec["collect_min"]}
        nm = nx.module_for(spec)
        nm.activate(spec["store"], 0)
        return nm

    def _driver_loaded(self) -> bool:
        """Whether the driver's views have their map set in the driver's JIT (a block ran)."""
        from toaster.backends.spark import native_exec as nx
        return nx.is_pinned(f"{self.store}-driver")

    def _take_inputs(self) -> list:
        """The input blocks whose Scatters are all planned: this job's stage 0. One still taking
        Scatters (a Scatter of its exchange block needs a Gather's result: the job runs first)
        waits for the next job of the batch, where the block that reads its temps is planned."""
        ready = [e for e in self._inputs if e[3]]
        self._inputs = [e for e in self._inputs if not e[3]]
        return ready
