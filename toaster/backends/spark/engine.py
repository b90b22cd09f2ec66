"""SparkEngine: runs a generated PySpark program in-process (toaster.engine.Engine)."""
from __future__ import annotations

import itertools
import re
import types

from toaster.m3.ir import M3Program
from toaster.engine import Engine, net_delta
from toaster.errors import InputError
from toaster.passes import Options
from toaster.runtime.batch import Batch
from toaster.dist.ir import DistProgram
from toaster.backends.spark.codegen import SparkProgram

_module_ids = itertools.count(1)


def compile_dist(m3: M3Program, partitioning: dict | None = None) -> DistProgram:
    """m3_to_dist, dist_simplify, dist_blocks, dist_fuse (through the pass manager)."""
    from toaster.dist.placement import partitioning_items
    from toaster.pipeline import BRANCHES, load_pass_modules
    from toaster.passes import run_spec
    load_pass_modules()
    spec = [p for p in BRANCHES["distributed"].passes if p != "dist_to_spark"]
    if partitioning:
        spec[0] += "{partitioning=" + ",".join(partitioning_items(partitioning)) + "}"
    return run_spec("|".join(spec), m3, Options(mode="batch"))


def load_program_module(source: str) -> types.ModuleType:
    """Execute generated source as a fresh module. It is deliberately not put in sys.modules,
    so cloudpickle ships its block functions to the workers by value."""
    mod = types.ModuleType(f"toaster_spark_program_{next(_module_ids)}")
    exec(compile(source, f"<{mod.__name__}>", "exec"), mod.__dict__)
    return mod


def _broadcast_values(dist) -> list:
    """Broadcast temps a local block computes from driver views alone (no batch): 'TMP_n (R)'."""
    from toaster.calculus import ir as C
    out = []
    for t in dist.triggers:
        local = {it.stmt.target: it.stmt.rhs for b in t.blocks if b.mode == "local" for it in b.items}
        out += [f"{x.source} ({t.event.relation})" for b in t.blocks if b.mode == "exchange" for x in b.items
                if x.kind == "broadcast" and x.source in local
                and not any(isinstance(n, C.DeltaRel) for n in C.subterms(local[x.source]))]
    return out


def explain_jobs(program: SparkProgram) -> str:
    """The Spark jobs and stages a batch runs, planned from the generated program (--explain)."""
    from toaster.backends.spark.runtime import driver_inputs, planned_counts
    cls = load_program_module(program.source).Program
    rels = [r for r in program.relations if r.name in cls.TRIGGERS]
    streams = [r.name for r in rels if r.kind != "table"]
    if program.native is not None:
        how = (f"dist blocks: native LLVM code in the executors "
               f"({len(program.native.entries)} entry points of "
               "one partition program, JIT once per worker process)")
    else:
        how = "dist blocks: " + ("Python functions (pygen)" if "def dist_block_" in program.source else "none")
    lines = [how]
    inputs = program.native.inputs if program.native is not None else {}
    executors = [r.name for r in rels if r.name in inputs and not inputs[r.name].on_driver]
    on_driver = [r.name for r in rels if r.name in inputs and inputs[r.name].on_driver]
    broadcast = [r for r in on_driver if inputs[r].broadcast]
    nonlinear = [r for r in on_driver if not inputs[r].broadcast]
    driver = [r.name for r in rels if r.name not in inputs]
    if broadcast:
        lines.append("batch input pre-aggregated natively on the driver and broadcast (Arrow/numpy "
                     "or the partition program's native code, no Python per row): " + ", ".join(broadcast))
    if nonlinear:
        lines.append("batch input pre-aggregated natively on the driver, whole (not linear in the batch; "
                     "the partition program's native code, no Python per row): " + ", ".join(nonlinear))
    if executors:
        lines.append("batch input read by the executors (each task pre-aggregates its slice natively, "
                     "one stage more): " + ", ".join(executors))
        arrow = [r for r in executors if inputs[r].plan is not None]
        if arrow:
            lines.append("  of which evaluated by Arrow/numpy, not the native block (filters, products, "
                         "one hash group-by: input_arrow.py): " + ", ".join(arrow))
    columnar = program.native.columnar if program.native is not None else frozenset()
    python = [r for r in driver if r not in columnar]
    if program.native is not None:
        from toaster.backends.spark.native_driver import explain_driver
        lines += explain_driver(program)
    elif any(c.mode == "local" for c in program.blocks):
        lines.append("driver local blocks: Python functions over IndexedMaps (no native program: "
                     + ("blocks=python)" if "def dist_block_" in program.source else "the program has no dist block)"))
    if driver and columnar & set(driver):
        lines.append("batch input joined on the driver by native driver blocks (the batch's columns, "
                     "no Python per row): " + ", ".join(r for r in driver if r in columnar))
    if python:
        lines.append("batch input pre-aggregated on the driver (its first block is not a linear "
                     "pre-aggregation scattered to the executors): " + ", ".join(python))
    if rels:
        from toaster.backends.spark.frame_input import frame_relations
        read, collected = frame_relations(inputs, rels)
        if read:
            lines.append("DataFrame batches (apply_frames, --stream-dir, --spark-input executors) read, checked "
                         "and pre-aggregated by the executors in stage 0 (no column on the driver): " + ", ".join(read))
        if collected:
            lines.append("DataFrame batches collected to the driver through Arrow first (a Spark job each; "
                         "their first block is not run by the executors): " + ", ".join(collected))
    replicated = [v for v, parts in cls.DIST_MAPS.items() if parts == ()]
    if replicated:
        broadcast = sorted({t.event.relation for t in program.dist.triggers for b in t.blocks
                            if b.mode == "exchange" for x in b.items if x.kind == "broadcast"})
        lines.append("replicated views (whole on every partition, updated by the broadcast batch): "
                     + ", ".join(replicated) + "; batches broadcast to every partition: " + ", ".join(broadcast))
    values = _broadcast_values(program.dist)
    if values:
        lines.append("one-row driver values Broadcast to join partitioned views where they lie (no view "
                     "gathered; m3_to_dist{scalar_broadcast}): " + ", ".join(values))
    lines.append("spark jobs per batch (planned; plus one snapshot job every checkpoint interval):")
    if streams:
        jobs, stages = planned_counts(cls, streams, inputs)
        lines.append(f"  a batch of every stream ({', '.join(streams)}): {jobs} job(s), {stages} stage(s)")
        moved = [r for r in driver_inputs(cls, streams, inputs) if r not in on_driver]
        if moved:
            lines.append(f"    of it pre-aggregated natively on the driver (the job's first stage reads it; "
                         f"that stage then runs in stage 0): {', '.join(moved)}")
    for r in rels:
        jobs, stages = planned_counts(cls, [r.name], inputs)
        lines.append(f"  {r.name} alone: {jobs} job(s), {stages} stage(s)")
    if not rels:
        lines.append("  no triggers: no job")
    return "\n".join(lines)


class SparkEngine(Engine):
    """SparkEngine(m3_program | dist_program | spark_program | source, relations=, queries=, ...).

    apply(batch) pre-aggregates the batch on the driver (net multiplicity per tuple) and runs
    the relation's batch trigger; apply_many(batches) runs the triggers of several relations,
    in order, as one step: one Spark job for all of them, plus one where a Scatter needs a
    Gather's result (`jobs_last_batch` counts them); apply_frames(frames) does the same with
    Spark DataFrames, read by the executors where the trigger allows. Distributed views stay
    resident in the executors' Python workers; `checkpoint_dir` (a path or URL every executor
    can reach; default a driver-local temp dir, enough for local masters) holds their durable
    copy, snapshotted every `checkpoint_every` batches (docs/spark-engine.md). That private log
    is not a toaster checkpoint: `checkpoint(path)` / `restore(path)` write and read the portable
    format of docs/checkpoints.md (every view, crossing to and from the other engines).
    `blocks`: 'native' (default: the dist blocks as one LLVM partition program, JIT-compiled once
    per worker process at `native_opt`) or 'python' (the pygen functions).
    """
    backend = "spark"

    def __init__(self, program, *, relations=None, queries=None, spark=None, master: str | None = None,
                 partitions: int | None = None, checkpoint_every: int = 50, partitioning: dict | None = None,
                 checkpoint_dir: str | None = None, blocks: str | None = None, native_opt: int = 1):
        if isinstance(program, M3Program):
            program = compile_dist(program, partitioning)
        if isinstance(program, SparkProgram) and blocks is not None and \
                blocks != ("native" if program.native is not None else "python"):
            program = program.dist          # regenerated the way asked for
        if isinstance(program, DistProgram):
            from toaster.backends.spark.codegen import dist_to_spark
            program = dist_to_spark(program, Options(mode="batch"), blocks or "native")
        if isinstance(program, SparkProgram):
            relations = program.relations if relations is None else relations
            queries = program.queries if queries is None else queries
            source = program.source
        else:
            source = str(program)
            if relations is None or queries is None:
                raise ValueError("SparkEngine from source text needs relations= and queries=")
        super().__init__(relations, queries)
        self.dist = program.dist if isinstance(program, SparkProgram) else None   # names views in errors
        self.source = source
        if spark is None:
            from toaster.backends.spark.session import get_spark
            spark = get_spark(master)
        self.module = load_program_module(source)
        native = program.native if isinstance(program, SparkProgram) else None
        self.program = self.module.Program(spark.sparkContext, partitions=partitions,
                                           checkpoint_every=checkpoint_every, checkpoint_dir=checkpoint_dir,
                                           native=native, native_opt=native_opt)
        self.program.start()

    def _apply(self, batch: Batch) -> None:
        self._apply_many([batch])

    def _apply_many(self, batches: list) -> None:
        """The batches' triggers, in order, planned into one Spark job (a second only where a
        Scatter needs a Gather's result). If it fails (in a task or on the driver) the runtime
        undoes every batch of it (DistRuntime.apply_deltas); an integer out of the 64-bit range
        is IntegerOverflowError."""
        # a relation no trigger reads (a table of the schema the query does not use) changes no
        # view: not even made into a dict
        self._run_deltas([(b.relation.upper(), self._delta(b)) for b in batches
                          if b.relation.upper() in self.program.TRIGGERS])

    def _delta(self, batch: Batch):
        """A relation with an input block: its rows go to the executors as columns (never Python
        objects here); the others are pre-aggregated on the driver (net multiplicity per row)."""
        from toaster.backends.spark.native_input import ColumnarDelta
        native = self.program.native
        if native is not None and self._columnar(batch, native.inputs, native.columnar):
            return ColumnarDelta([batch])
        return net_delta(batch)

    def apply_frames(self, frames, *, empty_strings: bool = False) -> None:
        """Apply one step given as Spark DataFrames ({relation: DataFrame} or (relation,
        DataFrame) pairs, run in that order), as apply_many would the same rows: one Spark job,
        undone whole if it fails. A DataFrame has the relation's columns by name (any order,
        case-insensitive, extra columns ignored), and optionally `__toaster_sign` (+1/-1) or
        `__toaster_op` ('1' insert, '0' delete; default: all inserts). A relation whose trigger
        starts with an input block the executors run (`--explain`: "DataFrame batches read by
        the executors") is read, checked and pre-aggregated by the tasks of the DataFrame's
        partitions inside the step's job: none of its columns reaches the driver. The others are
        collected through Arrow first (a Spark job each). A bad value is one InputError, the
        views unchanged. empty_strings: a null string is '' (Spark's CSV reader). In place of a
        DataFrame, a file_ranges.ByteRanges (rows of the relation's FROM FILE as byte ranges:
        `--spark-input executors`) is read by a task per range, or here if not by the executors.
        Docs: docs/spark-engine.md "DataFrame batches read by the executors"."""
        from toaster.backends.spark import frame_input
        from toaster.backends.spark.file_ranges import ByteRanges, read_ranges
        merged: dict = {}         # a relation given twice: the union of its rows (apply_many sums them)
        for relation, df in (frames.items() if isinstance(frames, dict) else frames):
            name = self._decl(relation).name
            if name not in merged:
                merged[name] = df
            elif isinstance(df, ByteRanges) and isinstance(merged[name], ByteRanges):
                merged[name] = ByteRanges(name, merged[name].rows + df.rows, merged[name].pieces + df.pieces)
            elif isinstance(df, ByteRanges) or isinstance(merged[name], ByteRanges):
                from toaster.errors import UnsupportedError
                raise UnsupportedError(f"{name} given twice in one step, as byte ranges and as a DataFrame")
            else:
                merged[name] = merged[name].unionByName(df)
        inputs = self.program.native.inputs if self.program.native is not None else {}
        read = set(frame_input.frame_relations(inputs, self.relations.values())[0])
        deltas, streamed = [], self._streamed
        for relation, df in merged.items():
            decl = self._decl(relation)
            if decl.kind == "table" and streamed:
                raise InputError(f"TABLE {decl.name} loaded after stream events (load every table first)")
            if decl.name in read and decl.name in self.program.TRIGGERS:
                deltas.append((decl.name, frame_input.frame_delta(decl, df, inputs[decl.name],
                                                                  empty_strings=empty_strings)))
            elif decl.name in self.program.TRIGGERS:
                batch = (read_ranges(decl, df) if isinstance(df, ByteRanges)     # read here, no job
                         else frame_input.collect_batch(decl, df, empty_strings=empty_strings))
                batch = batch and self._checked(batch, streamed)
                if batch:
                    deltas.append((decl.name, self._delta(batch)))
            streamed = streamed or decl.kind != "table"
        self._run_deltas(deltas)
        self._streamed = streamed

    def _run_deltas(self, deltas: list) -> None:
        try:
            self.program.apply_deltas(deltas)
        except Exception as e:
            from toaster.backends.spark.frame_input import input_error
            from toaster.backends.spark.worker import OVERFLOW_MARK
            bad = input_error(e, self.relations)
            if bad is not None:
                raise bad from None
            found = re.search(re.escape(OVERFLOW_MARK) + r"\[([^\]]+)\]", str(e))
            if found is None:
                raise
            from toaster.runtime.int64 import overflow_error
            raise overflow_error(found.group(1), self.queries, self.dist) from None

    @staticmethod
    def _columnar(batch, inputs: dict, driver=frozenset()) -> bool:
        """Whether the batch reaches the program as columns: an input block reads it (the columns
        it reads present), or only native driver blocks do (every column present)."""
        ib = inputs.get(batch.relation.upper())
        if ib is None:
            return batch.relation.upper() in driver and all(c is not None for c in batch.columns)
        return all(batch.columns[j] is not None for j in ib.columns)

    def relations_needed(self) -> frozenset:
        """The relations some trigger reads: `--run` reads no other source (either input, so a
        checkpoint's input position is the same with driver and executor input)."""
        return frozenset(r for r in self.relations if r in self.program.TRIGGERS)

    @property
    def jobs_last_batch(self) -> int:
        """Spark jobs the last apply / apply_many ran (snapshot jobs included)."""
        return self.program.jobs_last_batch

    @property
    def stages_last_batch(self) -> int:
        """Spark stages the last apply / apply_many's trigger jobs planned."""
        return self.program.stages_last_batch

    def read_map(self, name: str) -> dict:
        try:
            return self.program.read_map(name)
        except KeyError:
            raise self._unknown_map(name) from None

    # ---------------------------------------------------------- durability
    def _checkpoint_state(self, with_tables: bool):
        """The program's views, as the batch-mode M3 program names them: the distributed
        program adds only temps (its repartitioned copies, refilled by every batch), so a
        checkpoint holds the logical maps and crosses to and from the other engines."""
        from toaster.checkpoint import TableLayout
        from toaster.errors import UnsupportedError
        from toaster.types import Type
        prog = self.program
        if not prog.MAP_TYPES and (prog.LOCAL_MAPS or prog.DIST_MAPS):
            raise UnsupportedError("checkpoint of a spark program generated without MAP_TYPES (regenerate it)")
        for name in prog.MAP_TYPES:
            if name not in prog.LOCAL_MAPS and name not in prog.DIST_MAPS:
                raise UnsupportedError(f"checkpoint of view {name}, kept neither on the driver nor by key")
        layouts = tuple(TableLayout(n, tuple(Type(t) for t in keys), Type(value))
                        for n, (keys, value) in prog.MAP_TYPES.items())
        return self._map_state(layouts, with_tables)

    def _read_maps(self, names) -> dict:
        return self.program.read_maps(list(names))       # the distributed views in one job

    def _restore_tables(self, tables: dict) -> None:
        self.program.replace_state(tables)

    def write_program(self, path: str) -> None:
        """Write the generated program; run it with `spark-submit PATH REL=file.csv ...`
        (toaster must be importable by the driver, e.g. via --py-files or PYTHONPATH)."""
        with open(path, "w") as f:
            f.write(self.source)

    def close(self) -> None:
        self.program.close()
