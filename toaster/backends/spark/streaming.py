"""Maintain toaster views over a Structured Streaming source (issue 10 item 8).

    stream = maintain(sql_or_engine, spark, {"R": "in/r", "S": "in/s"}, "ckpt/q1",
                      trigger={"availableNow": True})
    stream.query.awaitTermination(); stream.engine.results()

Each relation is `spark.readStream.csv(directory)` with the schema of its declaration and the
CLI readers' conventions (toaster/runtime/csv_source.py: the declared delimiter, no quoting;
with `deletions := 'true'` each line is `seq|op|cols...`, op 1 = insert, 0 = delete). The
relations are united into ONE streaming query, so a micro-batch is one consistent step over all
of them. On the spark engine `foreachBatch` hands it, split per relation, to
`SparkEngine.apply_frames` (one Spark job; the executors read and pre-aggregate the relations
with input blocks, the others are collected through Arrow); on other engines it converts it to
toaster Batches column by column through Arrow (`DataFrame.toArrow`, no Python row loop) and
applies them as one step (`Engine.apply_many`).

Exactly once. Spark's checkpointLocation records which files each micro-batch read (offsets/)
and which micro-batches finished (commits/); after a restart it re-runs, with the same id and
the same files, a micro-batch that was planned but not committed. toaster keeps its views in a
toaster checkpoint (docs/checkpoints.md) written after EVERY micro-batch, before foreachBatch
returns (so before Spark commits it), recording the micro-batch id. At start the newest one is
restored; a micro-batch whose id it already holds is skipped. A crash therefore either loses
the toaster checkpoint of micro-batch b (restored at b-1; Spark re-runs b: applied once) or
Spark's commit of b (restored at b; Spark re-runs b: skipped). Start-up refuses locations that
disagree (Spark committed micro-batches the toaster state lacks, or the reverse).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from toaster.errors import InputError, ToasterError, UnsupportedError

RELATION_COLUMN = "__toaster_relation"
SEQ_COLUMN = "__toaster_seq"
OP_COLUMN = "__toaster_op"
FILE_COLUMN = "__toaster_file"
STATE_SUBDIR = "toaster"          # default toaster checkpoint directory, inside the Spark one


class StreamStateError(ToasterError):
    """The Spark checkpoint location and the toaster checkpoints disagree."""
    kind = "stream state error"


@dataclass
class ToasterStream:
    """A running maintenance query: `query` is Spark's StreamingQuery, `engine` holds the views."""
    query: object
    engine: object
    state_dir: str
    last_batch_id: int = -1            # the newest micro-batch whose updates the views hold
    applied: list = field(default_factory=list)    # micro-batch ids applied by this query
    skipped: list = field(default_factory=list)    # micro-batch ids found already applied
    error: Exception | None = None     # the toaster error that stopped the query (bad input...)

    def processAllAvailable(self) -> None:
        self._unwrapped(self.query.processAllAvailable)

    def awaitTermination(self, timeout=None):
        """As StreamingQuery's; a query stopped by a toaster error (e.g. a malformed line)
        raises that error itself, not Spark's wrapper of its traceback."""
        return self._unwrapped(self.query.awaitTermination, timeout)

    def _unwrapped(self, wait, *args):
        try:
            return wait(*args)
        except Exception:
            if self.error is not None:
                raise self.error from None
            raise

    def stop(self) -> None:
        self.query.stop()


def spark_schema(decl):
    """The Spark schema of a relation's CSV lines (sequence and op columns first with deletions)."""
    from pyspark.sql import types as T
    from toaster.runtime.csv_source import csv_settings
    if len(decl.columns) != len(decl.logical_columns):
        raise UnsupportedError(f"streaming input of relation {decl.name} with nullable columns")
    spark_types = {"int": T.LongType(), "float": T.DoubleType(), "date": T.DateType(),
                   "string": T.StringType(), "bool": T.BooleanType()}
    _, deletions = csv_settings(decl)
    fields = [T.StructField(SEQ_COLUMN, T.LongType()), T.StructField(OP_COLUMN, T.StringType())] if deletions else []
    for c in decl.columns:
        t = spark_types.get(c.type.value)
        if t is None:
            raise UnsupportedError(f"streaming input of column {decl.name}.{c.name} of type {c.type.value}")
        fields.append(T.StructField(_column(decl.name, c.name), t))
    return T.StructType(fields)


def _column(relation: str, column: str) -> str:
    return f"{relation}__{column}"


def stream_frame(spark, decls: dict, sources: dict, max_files_per_trigger: int | None = None):
    """One streaming DataFrame of every relation's files: the relation's name, its columns
    (named REL__COL, null for the other relations), op and seq with deletions, the file."""
    from pyspark.sql import functions as F
    from toaster.runtime.csv_source import csv_settings
    frames = []
    for name, directory in sources.items():
        decl = decls[name]
        delim, _ = csv_settings(decl)
        reader = (spark.readStream.schema(spark_schema(decl))
                  .option("sep", delim).option("quote", "").option("header", "false")
                  .option("mode", "FAILFAST").option("dateFormat", "yyyy-MM-dd")
                  .option("ignoreLeadingWhiteSpace", "false").option("ignoreTrailingWhiteSpace", "false"))
        if max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
        df = reader.csv(str(directory))
        frames.append(df.select(F.lit(name).alias(RELATION_COLUMN), F.input_file_name().alias(FILE_COLUMN), "*"))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df, allowMissingColumns=True)
    return out


def arrow_batches(table, decls: dict, relations) -> list:
    """The toaster Batches of one micro-batch (a pyarrow Table of stream_frame's columns), one
    per relation in `relations` order that has rows; columns stay Arrow arrays."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from toaster.runtime.batch import Batch
    from toaster.runtime.csv_source import csv_settings
    out = []
    for name in relations:
        rows = table.filter(pc.equal(table[RELATION_COLUMN], name))
        if rows.num_rows == 0:
            continue
        decl = decls[name]
        names = [_column(name, c.name) for c in decl.columns]
        columns = []
        for col_name, c in zip(names, decl.columns):
            col = _canonical(rows[col_name].combine_chunks())
            if c.type.value == "string":    # Spark reads an empty field as null; toaster as ''
                col = pc.fill_null(col, "")
            elif col.null_count:
                bad = rows.filter(pc.is_null(rows[col_name]))
                raise InputError(f"{name}: empty field for column {c.name} "
                                 f"in {bad[FILE_COLUMN][0].as_py()}")
            columns.append(col)
        signs = None
        if csv_settings(decl)[1]:
            op = rows[OP_COLUMN]
            ok = pc.is_in(op, value_set=pa.array(["0", "1"]))
            if not pc.all(pc.fill_null(ok, False)).as_py():
                bad = rows.filter(pc.invert(pc.fill_null(ok, False)))
                raise InputError(f"{name}: bad operation {bad[OP_COLUMN][0].as_py()!r} (expected 1 = insert, "
                                 f"0 = delete) in {bad[FILE_COLUMN][0].as_py()}")
            signs = np.where(pc.equal(op, "0").to_numpy(zero_copy_only=False), -1, 1).astype(np.int8)
        out.append(Batch.from_columns(name, columns, signs=signs))
    return out


def relation_frames(df, decls: dict, relations) -> dict:
    """{relation: DataFrame} of one micro-batch (stream_frame's columns) for
    SparkEngine.apply_frames: each relation's rows and columns under their declared names, with
    the op and the file; lazy, no Spark job."""
    from pyspark.sql import functions as F
    from toaster.backends.spark.frame_input import FILE, OP
    from toaster.runtime.csv_source import csv_settings
    out = {}
    for name in relations:
        decl = decls[name]
        cols = [F.col(_column(name, c.name)).alias(c.name) for c in decl.columns]
        if csv_settings(decl)[1]:
            cols.append(F.col(OP_COLUMN).alias(OP))
        out[name] = df.filter(F.col(RELATION_COLUMN) == name).select(*cols, F.col(FILE_COLUMN).alias(FILE))
    return out


def _canonical(arr):
    import pyarrow as pa
    if pa.types.is_large_string(arr.type):
        return arr.cast(pa.string())
    return arr


def _local_path(location: str) -> str | None:
    if location.startswith("file://"):
        return location[len("file://"):]
    return None if "://" in location else location


def _spark_committed(checkpoint_location: str) -> int | None:
    """The newest micro-batch id Spark's checkpoint committed (-1: none; None: cannot tell)."""
    path = _local_path(checkpoint_location)
    if path is None:
        return None
    commits = os.path.join(path, "commits")
    if not os.path.isdir(commits):
        return -1
    ids = [int(n) for n in os.listdir(commits) if n.isdigit()]
    return max(ids, default=-1)


def _restored_batch_id(engine, state_dir: str, checkpoint_location: str) -> int:
    """Check that the two locations agree, restore the newest toaster checkpoint (if any) and
    return the micro-batch id it holds (-1: none)."""
    from toaster.checkpoint import latest_checkpoint, read_manifest
    newest = latest_checkpoint(state_dir) if os.path.isdir(state_dir) else None
    restored = -1
    if newest is not None:
        position = read_manifest(newest).get("position") or {}
        restored = int((position.get("stream") or {}).get("batch_id", -1))
    elif getattr(engine, "_streamed", False):
        # e.g. an engine reused after a failed micro-batch: its views may hold updates that
        # Spark will deliver again
        raise StreamStateError(f"the engine already holds stream updates but {state_dir} holds no "
                               "checkpoint: start from a fresh engine")
    committed = _spark_committed(checkpoint_location)
    if committed is not None and not (committed <= restored <= committed + 1):
        raise StreamStateError(
            f"{state_dir} holds the views after micro-batch {restored}, but Spark's checkpoint "
            f"{checkpoint_location} committed micro-batch {committed}: they belong to different runs "
            f"(use the same pair of locations, or new ones for a fresh start)")
    if newest is not None:
        engine.restore(newest)
    return restored


def maintain(engine_or_sql, spark, sources: dict, checkpoint_location: str, *, state_dir: str | None = None,
             trigger: dict | None = None, max_files_per_trigger: int | None = None, base_dir: str | None = None,
             keep: int = 2, on_batch=None, on_start=None, query_name: str | None = None, **engine_options) -> ToasterStream:
    """Start a streaming query that keeps the views of `engine_or_sql` (an Engine, or SQL text
    compiled for the spark engine on `spark`) up to date with the CSV files arriving in the
    `sources` directories ({relation: directory}, every STREAM the views read).

    checkpoint_location: Spark's (the files consumed; any URL Spark accepts). state_dir: the
    toaster checkpoints, one per micro-batch, newest `keep` kept (a local path; default
    checkpoint_location/toaster). On a restart with the same two locations the views are
    restored and the stream continues exactly once. TABLEs the views read are loaded from their
    FROM FILE sources (relative to base_dir) when the state is new. trigger: keyword arguments
    of DataStreamWriter.trigger (e.g. {"availableNow": True}; default Spark's: as fast as
    possible). on_start(engine), if given, runs once the state is restored (or the tables
    loaded), before the query starts; on_batch(engine, batch_id, batches) after each applied
    micro-batch and its checkpoint (`batches`: the Batches applied, or on the spark engine, whose
    executors read the micro-batch (SparkEngine.apply_frames), the {relation: DataFrame})."""
    from toaster.checkpoint import checkpoint_name, prune_checkpoints
    engine = _engine(engine_or_sql, spark, engine_options)
    decls = engine.relations
    sources = {name.upper(): str(d) for name, d in sources.items()}
    for name in sources:
        if name not in decls:
            raise UnsupportedError(f"streaming input of {name}: the program declares no such relation")
        if decls[name].kind == "table":
            raise UnsupportedError(f"streaming input of TABLE {name} (tables are static: loaded from FROM FILE)")
    needed = engine.relations_needed()
    missing = sorted(n for n in needed if decls[n].kind != "table" and n not in sources)
    if missing:
        raise UnsupportedError(f"streaming input without a directory for stream {missing[0]}")
    if state_dir is None:
        local = _local_path(checkpoint_location)
        if local is None:
            raise UnsupportedError("a non-local Spark checkpoint location without state_dir= for toaster's checkpoints")
        state_dir = os.path.join(local, STATE_SUBDIR)
    os.makedirs(state_dir, exist_ok=True)
    restored = _restored_batch_id(engine, state_dir, checkpoint_location)
    if restored < 0:
        _load_tables(engine, [decls[n] for n in sorted(needed) if decls[n].kind == "table"], base_dir)
    if on_start is not None:
        on_start(engine)
    order = [n for n in decls if n in sources]          # declaration order within a micro-batch
    handle = ToasterStream(None, engine, state_dir, restored)

    def apply_micro_batch(df, batch_id: int) -> None:
        try:
            apply_new(df, batch_id)
        except ToasterError as e:
            handle.error = e
            raise

    def apply_new(df, batch_id: int) -> None:
        if batch_id <= handle.last_batch_id:       # applied and checkpointed before a restart
            handle.skipped.append(batch_id)
            return
        if hasattr(engine, "apply_frames"):       # the spark engine: its executors read the micro-batch
            batches = relation_frames(df, decls, order)
            engine.apply_frames(batches, empty_strings=True)
        else:
            from toaster.backends.spark.frame_input import to_arrow
            table = to_arrow(df)
            batches = arrow_batches(table, decls, order) if table is not None and table.num_rows else []
            if batches:
                engine.apply_many(batches)
        engine.checkpoint(os.path.join(state_dir, checkpoint_name(batch_id)),
                          {"stream": {"batch_id": batch_id, "sources": sources,
                                      "checkpoint_location": checkpoint_location}})
        prune_checkpoints(state_dir, keep=keep)
        handle.last_batch_id = batch_id
        handle.applied.append(batch_id)
        if on_batch is not None:
            on_batch(engine, batch_id, batches)

    writer = (stream_frame(spark, decls, sources, max_files_per_trigger).writeStream
              .foreachBatch(apply_micro_batch).option("checkpointLocation", checkpoint_location))
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name:
        writer = writer.queryName(query_name)
    handle.query = writer.start()
    return handle


def _engine(engine_or_sql, spark, options: dict):
    from toaster.engine import Engine
    if isinstance(engine_or_sql, Engine):
        if options:
            raise TypeError(f"engine options {sorted(options)} given with an engine")
        return engine_or_sql
    from toaster.backends.spark.engine import SparkEngine
    from toaster.pipeline import compile_sql
    comp = compile_sql(str(engine_or_sql), mode="batch")
    return SparkEngine(comp.stage("spark"), spark=spark, **options)


def _load_tables(engine, decls, base_dir) -> None:
    from toaster.runtime.csv_source import read_source
    for decl in decls:
        for b in read_source(decl, base_dir=base_dir):
            engine.apply(b)
