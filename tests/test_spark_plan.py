"""The driver's stage planning (runtime.DistRuntime._place, job_plan._lead_in_stage0), without
Spark: which stage each dist block and exchange of a batch's triggers lands in. A later
trigger's block joins an earlier stage only when it commutes with everything planned after
it; the end-to-end check (views equal DuckDB after every multi-relation batch) is in
test_spark_state.py / test_spark_input.py."""
from __future__ import annotations

from toaster.backends.spark import native_input
from toaster.backends.spark.runtime import DistRuntime, _DryRun, planned_counts


def _blk(name):
    def fn():
        pass
    fn.__name__ = name
    return fn


class _Capture(_DryRun):
    def _run_job(self, more_follow):
        self.plans.append([(sorted(b[0].__name__ for b in st.blocks),
                            sorted(x[0] for x in st.reparts + st.gathers)) for st in self._stages])
        self.leads.append(bool(self._lead_in_stage0([e for e in self._inputs if e[3]], more_follow)))
        super()._run_job(more_follow)


def _plan(cls, rels, inputs=None):
    prog = type("Capture", (_Capture, cls), {"plans": [], "leads": []})(inputs=inputs)
    prog.plans, prog.leads = [], []
    prog.begin_batch()
    for r in rels:
        getattr(prog, prog.TRIGGERS[r])(native_input.ColumnarDelta([]) if r in (inputs or {}) else {})
    prog.end_batch()
    return prog


def _program(b_reads, b_writes, a_repart_view=False):
    """Trigger A: [repart of view V1 when asked] block a1 (writes V1, T1) -> Repart T2 <- T1 ->
    block a2 (reads T2, V2; writes V2). Trigger B: block b1 (reads b_reads, writes b_writes) ->
    Repart U2 <- U1 -> block b2 (reads U2, writes V3)."""
    class Prog(DistRuntime):
        DIST_MAPS = {"V1": (0,), "V2": (0,), "V3": (0,), "V4": (0,)}
        TRIGGERS = {"A": "on_a", "B": "on_b"}

        def on_a(self, delta):
            self.begin_trigger("DELTA_A", delta)
            self.run_local(_blk("in_a"), ("DELTA_A",), ())     # A's input block (when columnar)
            if a_repart_view:
                self.repart("T0", "V1", (0,))
            self.run_dist(_blk("a1"), ("V1", "T0") if a_repart_view else ("V1",), ("V1", "T1"))
            self.repart("T2", "T1", (0,))
            self.run_dist(_blk("a2"), ("T2", "V2"), ("V2",))
            self.end_trigger(("T1", "T2"))

        def on_b(self, delta):
            self.begin_trigger("DELTA_B", delta)
            self.run_dist(_blk("b1"), tuple(b_reads), tuple(b_writes) + ("U1",))
            self.repart("U2", "U1", (0,))
            self.run_dist(_blk("b2"), ("U2", "V3"), ("V3",))
            self.end_trigger(("U1", "U2"))
    return Prog


def test_commuting_block_of_a_later_trigger_joins_the_first_stage():
    prog = _plan(_program(["V4"], ["V4"]), ["A", "B"])
    assert prog.plans == [[(["a1", "b1"], ["T2", "U2"]), (["a2", "b2"], [])]]
    assert prog.stages_last_batch == 2


def test_block_reading_what_a_later_stage_writes_waits_for_it():
    prog = _plan(_program(["V2"], []), ["A", "B"])        # b1 reads V2, which a2 writes in stage 2
    assert prog.plans == [[(["a1"], ["T2"]), (["a2", "b1"], ["U2"]), (["b2"], [])]]


def test_block_writing_what_a_later_stage_reads_waits_for_it():
    prog = _plan(_program([], ["V2"]), ["A", "B"])        # a2 reads V2: b1 must not write it first
    assert prog.plans == [[(["a1"], ["T2"]), (["a2", "b1"], ["U2"]), (["b2"], [])]]


def test_block_writing_a_repart_source_of_its_stage_waits():
    prog = _plan(_program([], ["T1"]), ["A", "B"])        # Repart T2 <- T1 reads after stage 1's blocks
    assert prog.plans == [[(["a1"], ["T2"]), (["a2", "b1"], ["U2"]), (["b2"], [])]]


def test_a_first_stage_of_view_reparts_runs_in_stage_0():
    """A first stage that only moves views joins stage 0 when the batch has input blocks (the
    view's partition p is read by stage 0's task p); without input blocks it is a stage."""
    cls = _program(["V2"], [], a_repart_view=True)
    prog = _plan(cls, ["A", "B"])
    assert prog.plans == [[([], ["T0"]), (["a1"], ["T2"]), (["a2", "b1"], ["U2"]), (["b2"], [])]]
    assert prog.leads == [False] and prog.stages_last_batch == 4
    inputs = {"A": native_input.InputBlock("A", "in_a", "DELTA_A", ())}
    prog = _plan(cls, ["A", "B"], inputs)
    assert prog.leads == [True] and prog.stages_last_batch == 4     # stage 0 + 3
    assert planned_counts(cls, ["A", "B"], inputs) == (1, 3)     # run as B, A: best_order


def test_commuting_block_joins_a_stage_of_view_reparts():
    prog = _plan(_program(["V4"], ["V4"], a_repart_view=True), ["A", "B"])
    assert prog.plans == [[(["b1"], ["T0", "U2"]), (["a1", "b2"], ["T2"]), (["a2"], [])]]


def _spread_program(spread: bool, later_reader: bool = False):
    """Trigger A: input block (DELTA_A -> T1) -> Scatter T2 <- T1 -> block s1 (T2 -> T3, a Random
    partial sum) -> Gather T4 <- T3 -> local block (T4 -> R); with later_reader, a second dist
    block in a later stage also reads T2."""
    class Prog(DistRuntime):
        LOCAL_MAPS = ("R",)
        DIST_MAPS = {"V": (0,)}
        TRIGGERS = {"A": "on_a"}
        SPREAD_BLOCKS = ("s1",) if spread else ()

        def on_a(self, delta):
            self.begin_trigger("DELTA_A", delta)
            self.run_local(lambda: self.local.__setitem__("T1", {}), ("DELTA_A",), ("T1",))
            self.scatter("T2", "T1", (0,))
            self.run_dist(_blk("s1"), ("T2",), ("T3",))
            self.gather("T4", "T3")
            if later_reader:
                self.run_dist(_blk("b2"), ("T2", "T4", "V"), ("V",))
            self.run_local(lambda: None, ("T4",), ("R",))
            self.end_trigger(("T1", "T2", "T3", "T4"))
    return Prog


def test_a_first_stage_of_spread_blocks_runs_in_stage_0():
    """Spread blocks (native_input.spread_blocks) on the temps of this job's input blocks run in
    stage 0's tasks: a global sum is one stage. Not when the block is not spread, when there is
    no input block, or when a later stage reads the spread temps (they were not partitioned)."""
    inputs = {"A": native_input.InputBlock("A", "in_a", "DELTA_A", ("T1",))}
    prog = _plan(_spread_program(True), ["A"], inputs)
    assert prog.leads == [True] and prog.stages_last_batch == 1
    assert planned_counts(_spread_program(True), ["A"], inputs) == (1, 1)
    assert planned_counts(_spread_program(False), ["A"], inputs) == (1, 2)
    assert planned_counts(_spread_program(True), ["A"]) == (1, 1)          # driver input: parallelize
    assert _plan(_spread_program(True), ["A"]).leads == [False]
    prog = _plan(_spread_program(True, later_reader=True), ["A"], inputs)
    assert prog.leads == [False] and prog.stages_last_batch == 3


def _driver_input_program():
    """Two streams read by the executors. C (small): input block -> Scatter TC2 -> block c1
    (TC2, V1) -> Repart TC4 -> block c2 (writes V2). A: input block -> Scatter TA2 -> block a1
    (TA2, V2: after c2) -> Repart TA4 -> block a2 (writes V3)."""
    class Prog(DistRuntime):
        DIST_MAPS = {"V1": (0,), "V2": (0,), "V3": (0,)}
        TRIGGERS = {"A": "on_a", "C": "on_c"}

        def on_c(self, delta):
            self.begin_trigger("DELTA_C", delta)
            self.run_local(_blk("in_c"), ("DELTA_C",), ("TC1",))
            self.scatter("TC2", "TC1", (0,))
            self.run_dist(_blk("c1"), ("TC2", "V1"), ("V1", "TC3"))
            self.repart("TC4", "TC3", (0,))
            self.run_dist(_blk("c2"), ("TC4", "V2"), ("V2",))
            self.end_trigger(("TC1", "TC2", "TC3", "TC4"))

        def on_a(self, delta):
            self.begin_trigger("DELTA_A", delta)
            self.run_local(_blk("in_a"), ("DELTA_A",), ("TA1",))
            self.scatter("TA2", "TA1", (0,))
            self.run_dist(_blk("a1"), ("TA2", "V2"), ("TA3",))
            self.repart("TA4", "TA3", (0,))
            self.run_dist(_blk("a2"), ("TA4", "V3"), ("V3",))
            self.end_trigger(("TA1", "TA2", "TA3", "TA4"))
    return Prog


class _Moves(_DryRun):
    def _run_job(self, more_follow):
        inputs = [e for e in self._inputs if e[3]]
        moved = self._driver_inputs(inputs, more_follow)
        self.moved.append(sorted(e[0].relation for e in moved))
        rest = [e for e in inputs if not any(e is m for m in moved)]
        self.leads.append(self._lead_in_stage0(rest, more_follow))
        super()._run_job(more_follow)


def test_small_input_whose_temps_the_first_stage_reads_runs_on_the_driver():
    """C's temps are read by the first stage, A's only from the second: C's input block runs on
    the driver (its temps are driver records of stage 0) and the first stage joins stage 0
    (`records` lead): stage 0 + 2 stages instead of stage 0 + 3."""
    cls = _driver_input_program()
    inputs = {r: native_input.InputBlock(r, f"in_{r.lower()}", f"DELTA_{r}", (f"T{r}1",)) for r in "AC"}

    def run(extra=None):
        prog = type("Moves", (_Moves, cls), extra or {})(inputs=inputs)
        prog.moved, prog.leads = [], []
        prog.begin_batch()
        for r in ["C", "A"]:
            getattr(prog, prog.TRIGGERS[r])(native_input.ColumnarDelta([]))
        prog.end_batch()
        return prog
    prog = run()
    assert prog.moved == [["C"]] and prog.leads == ["records"] and prog.stages_last_batch == 3
    kept = run({"_driver_inputs": lambda self, inputs, more: []})
    assert kept.leads == [False] and kept.stages_last_batch == 4
    assert planned_counts(cls, ["A", "C"], inputs) == (1, 3)
    assert planned_counts(cls, ["A"], inputs) == (1, 3)          # one input: nothing moves


def test_a_large_input_batch_stays_on_the_executors():
    """The size veto: the moved batches may exceed DRIVER_INPUT_ROWS only when the staying ones
    are larger still (the driver pre-aggregates on one core)."""
    cls = _driver_input_program()
    inputs = {r: native_input.InputBlock(r, f"in_{r.lower()}", f"DELTA_{r}", (f"T{r}1",)) for r in "AC"}
    big = cls.DRIVER_INPUT_ROWS + 1

    def moved(rows_c, rows_a):
        prog = type("Moves", (_Moves, cls), {})(inputs=inputs)
        prog.moved, prog.leads = [], []
        prog.begin_batch()
        prog.on_c(native_input.ColumnarDelta([range(rows_c)]))
        prog.on_a(native_input.ColumnarDelta([range(rows_a)]))
        prog.end_batch()
        return prog.moved
    assert moved(10, 5) == [["C"]]
    assert moved(big, 10) == [[]]
    assert moved(big, 2 * big) == [["C"]]
