"""Batches given as Spark DataFrames, read and pre-aggregated by the executors (issue 10 item 4).

`SparkEngine.apply_frames({relation: DataFrame})` runs one step, like `apply_many`, but no
column of a relation with an input block (native_input.InputBlock, not run on the driver)
reaches the driver. Its DataFrame joins the step's one Spark job as part of stage 0:

    DataFrame (files, a micro-batch, any plan)
      -> mapInArrow(frame task): per partition, its Arrow record batches checked and made
         canonical (the checks Engine.apply runs on the driver: types, nulls, dates, NaN and
         infinities, signs), the input block run on them as on a slice (native_input.run_input:
         Arrow plan or native block), the temps split by their Scatters' partitions
      -> rows (dest, pickled records): a few per partition, never one per tuple
      -> .rdd, united with stage 0's RDD (the driver's records, other relations' slices)
      -> partitionBy(P) -> the trigger's dist stages, as for a ColumnarDelta

A relation without such an input block (broadcast or non-linear input blocks, driver blocks) is
collected through Arrow on the driver (`collect_batch`, the same checks) and applied as a Batch;
`--explain --backend spark` lists both sets (`frame_relations`). Nullable columns get their
value and null flag in the tasks (toaster.runtime.nulls).

A DataFrame of CSV lines (a LINE column, with FILE and BLOCK: file_frames.csv_frame) is parsed
in the tasks by the CLI's own reader (frame_lines.py). In place of a DataFrame, a relation's
file_ranges.ByteRanges (`--spark-input executors`) is an RDD of byte ranges, a task each
(range_task: the task reads and parses its range; no JVM line splitting, no Arrow hand-over).

A bad value fails its task with ERROR_MARK and a payload (relation, column, message, the row's
position); the job fails, the runtime undoes the step, and `input_error` turns the payload into
one InputError. For CSV lines the payload holds the file, the start of the task's split and the
line's number in it: only then does the driver read the file, to number the line in the file.
"""
from __future__ import annotations

import base64
import json
import pickle
import re
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from toaster.backends.spark.native_input import ColumnarDelta
from toaster.errors import InputError
from toaster.types import Type

OP = "__toaster_op"              # '1' insert, '0' delete (CSV files with deletions)
SIGN = "__toaster_sign"          # +1 / -1 (any integer column)
FILE = "__toaster_file"          # the file a row came from (error locations)
BLOCK = "__toaster_block"        # the byte offset where the row's file split starts (line numbers)
LINE = "__toaster_line"          # a CSV line of the relation's source format (parsed in the tasks)
ERROR_MARK = "TOASTER_FRAME_INPUT_ERROR"
_SPECIAL = {"op": OP, "sign": SIGN, "file": FILE, "block": BLOCK, "line": LINE}   # FrameLayout field -> name
_SPARK_TYPES = {"int": ("LongType", "IntegerType", "ShortType", "ByteType"),
                "float": ("DoubleType", "FloatType", "LongType", "IntegerType", "ShortType", "ByteType"),
                "date": ("DateType", "LongType"), "string": ("StringType",), "bool": ("BooleanType",)}


@dataclass(frozen=True)
class FrameLayout:
    """Where a relation's columns are in a DataFrame, checked against its declaration on the
    driver from the schema alone (no Spark job)."""
    relation: str
    columns: tuple         # the declared column names
    names: tuple           # the DataFrame column of each declared column
    types: tuple           # each declared column's type name
    finite: tuple          # each column's `finite` flag (infinities refused)
    op: str | None = None
    sign: str | None = None
    file: str | None = None
    block: str | None = None
    line: str | None = None
    empty_strings: bool = False     # a null string is '' (Spark's CSV reader reads '' as null)
    decl: object = None             # with `line`: the declaration the lines are parsed by
    nullable: tuple = ()            # each declared column's NULL flag
    physical: tuple = ()            # per physical column (the engine's): (declared column, is its null flag)


def frame_layout(decl, df, *, empty_strings: bool = False) -> FrameLayout:
    """The layout of `df` for relation `decl`: its declared columns by name (case-insensitive),
    or a LINE column of CSV lines (with FILE and BLOCK); and the optional special columns (OP or
    SIGN, FILE, BLOCK). A nullable column's nulls are NULLs (its value and null flag are made
    where the batch is checked, as Engine.apply makes them)."""
    from toaster.backends.spark.file_ranges import ByteRanges
    logical = decl.logical_columns
    common = dict(relation=decl.name, columns=tuple(c.name for c in logical), types=tuple(c.type.value for c in logical),
                  finite=tuple(bool(c.finite) for c in logical), empty_strings=empty_strings,
                  nullable=tuple(c.nullable for c in logical),
                  physical=tuple(p for k, c in enumerate(logical) for p in ((k, False), (k, True))[:1 + c.nullable]))
    if isinstance(df, ByteRanges):            # file byte ranges the tasks read (file_ranges.py)
        return FrameLayout(names=(), decl=decl, **common)
    fields = {f.name.upper(): f for f in df.schema.fields}
    special = {k: (fields[k.upper()].name if k.upper() in fields else None) for k in _SPECIAL.values()}
    common.update(file=special[FILE], block=special[BLOCK])
    if special[LINE]:
        if not (special[FILE] and special[BLOCK]):
            raise InputError(f"{decl.name}: a DataFrame of CSV lines ({LINE}) needs {FILE} and {BLOCK}")
        return FrameLayout(names=(), line=special[LINE], decl=decl, **common)
    names = []
    for c in logical:
        f = fields.get(c.name.upper())
        if f is None:
            raise InputError(f"{decl.name}: the DataFrame has no column {c.name} "
                             f"(its columns: {', '.join(df.columns)})")
        if type(f.dataType).__name__ not in _SPARK_TYPES[c.type.value]:
            raise InputError(f"{decl.name}.{c.name}: expected {c.type.value} values, got a Spark "
                             f"{f.dataType.simpleString()} column")
        names.append(f.name)
    if special[OP] and special[SIGN]:
        raise InputError(f"{decl.name}: the DataFrame has both {OP} and {SIGN}")
    return FrameLayout(names=tuple(names), op=special[OP], sign=special[SIGN], **common)


class FrameDelta(ColumnarDelta):
    """A relation's batch as a Spark DataFrame (its columns c<position> for the positions the
    input block reads, plus the special ones): read by the executors in stage 0. Its size is
    unknown without a job, so it counts as non-empty (an empty one adds nothing)."""
    __slots__ = ("frame", "layout")

    def __init__(self, frame, layout: FrameLayout):
        super().__init__(())
        self.frame, self.layout = frame, layout

    def __len__(self) -> int:
        return 1

    def slices(self, parts: int, columns) -> list:
        raise AssertionError("a DataFrame batch is read by the executors, never sliced on the driver")


def frame_delta(decl, df, ib, *, empty_strings: bool = False) -> FrameDelta:
    """The FrameDelta of `df` for input block `ib`: only the declared columns it reads, renamed
    l<declared position>."""
    from toaster.backends.spark.file_ranges import ByteRanges
    layout = frame_layout(decl, df, empty_strings=empty_strings)
    if isinstance(df, ByteRanges):          # read by range_task as they are
        return FrameDelta(df, layout)
    wanted = sorted({layout.physical[j][0] for j in ib.columns}) if layout.names else []
    keep = [f"{_quoted(layout.names[k])} AS l{k}" for k in wanted]      # SQL text: one py4j call
    extra = [f"{_quoted(getattr(layout, f))} AS {k}" for f, k in _SPECIAL.items() if getattr(layout, f)]
    renamed = replace(layout, names=tuple(f"l{k}" for k in range(len(layout.names))),
                      **{f: (k if getattr(layout, f) else None) for f, k in _SPECIAL.items()})
    return FrameDelta(df.selectExpr(*keep, *extra), renamed)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def frame_relations(inputs: dict, relations) -> tuple[list, list]:
    """(relations whose DataFrame batches the executors read, relations whose DataFrame batches
    are collected on the driver), in the order of `relations` (declarations); `inputs`: the
    partition program's input blocks."""
    read, collected = [], []
    for r in relations:
        ib = inputs.get(r.name)
        (read if ib is not None and not ib.on_driver else collected).append(r.name)
    return read, collected


# ------------------------------------------------------------------ checks (tasks and driver)
class FrameRowError(Exception):
    """A bad row of a DataFrame batch: `payload` says where (see input_error)."""

    def __init__(self, payload: dict):
        super().__init__(ERROR_MARK + "[" + base64.b64encode(json.dumps(payload).encode()).decode() + "]")
        self.payload = payload


def canonical_columns(table, layout: FrameLayout, positions) -> tuple[dict, np.ndarray]:
    """({position: canonical column}, signs int8) of an Arrow table of a DataFrame batch, checked
    as Engine.apply checks a batch (vectorized); FrameRowError names the first bad row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from toaster.runtime.checks import days_to_yyyymmdd, nonfinite_mask, nonfinite_reason, yyyymmdd_ok
    if layout.line is not None:
        from toaster.backends.spark.frame_lines import parse_lines
        batch = parse_lines(table, layout, positions)
        return {j: batch.columns[j] for j in positions}, batch.signs
    n = table.num_rows
    bad: list = []          # (row, column name or None, message)

    def first(mask, column, message):
        rows = np.flatnonzero(mask)
        if len(rows):
            bad.append((int(rows[0]), column, message(int(rows[0]))))
    from toaster.runtime.nulls import _split_nulls
    cols = {}
    where = {p: j for j, p in enumerate(layout.physical)}        # (declared, is flag) -> physical
    for k in sorted({layout.physical[j][0] for j in positions}):
        col = table.column(layout.names[k]).combine_chunks()
        t, cname, j = layout.types[k], layout.columns[k], where[(k, False)]
        if pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        if layout.nullable[k]:            # NULL: the type's NULL value and a flag (nulls.py)
            col, cols[where[(k, True)]] = _split_nulls(Type(t), col)
        elif col.null_count:
            if t == "string" and layout.empty_strings:
                col = pc.fill_null(col, "")
            else:
                what = "empty field" if layout.empty_strings else "null value"
                first(col.is_null().to_numpy(zero_copy_only=False), cname,
                      lambda i: f"{layout.relation}: {what} for column {cname}")
                col = pc.fill_null(col, _zero(col.type))
        if t == "string":
            cols[j] = col
            continue
        if t == "date" and pa.types.is_date32(col.type):
            vals = days_to_yyyymmdd(col.cast(pa.int32()).to_numpy(zero_copy_only=False))
        else:
            vals = col.to_numpy(zero_copy_only=False)
        if t == "date":
            vals = vals.astype(np.int64, copy=False)
            first(~yyyymmdd_ok(vals), cname, lambda i: f"{layout.relation}.{cname}: not a calendar date "
                                                        f"in years 1-9999: {vals[i]}")
        elif t == "float":
            vals = vals.astype(np.float64, copy=False)
            first(nonfinite_mask(SimpleNamespace(finite=layout.finite[k]), vals), cname,
                  lambda i: f"{layout.relation}.{cname}: {vals[i]}: {nonfinite_reason(float(vals[i]))}")
        elif t == "int":
            vals = vals.astype(np.int64, copy=False)
        cols[j] = vals
    signs = np.ones(n, np.int8)
    if layout.op is not None:
        op = table.column(layout.op)
        ok = pc.fill_null(pc.is_in(op, value_set=pa.array(["0", "1"])), False).to_numpy(zero_copy_only=False)
        first(~ok, None, lambda i: f"{layout.relation}: bad operation {op[i].as_py()!r} "
                                   "(expected 1 = insert, 0 = delete)")
        signs[pc.fill_null(pc.equal(op, "0"), False).to_numpy(zero_copy_only=False)] = -1
    elif layout.sign is not None:
        s = table.column(layout.sign).fill_null(0).to_numpy(zero_copy_only=False)
        first((s != 1) & (s != -1), None, lambda i: f"{layout.relation}: row sign {s[i]} (must be +1 or -1)")
        signs = s.astype(np.int8)
    if bad:
        row, column, message = min(bad, key=lambda b: b[0])
        raise FrameRowError(_where(table, layout, row, column, message))
    return cols, signs


def _zero(arrow_type):
    """A placeholder for the nulls of a column already found bad (the other checks still run)."""
    import pyarrow as pa
    if pa.types.is_string(arrow_type):
        return pa.scalar("")
    return pa.scalar(0, pa.int32()).cast(arrow_type)


def _where(table, layout: FrameLayout, row: int, column, message: str) -> dict:
    """The payload of a bad row: its row in the task, and its file when the DataFrame says."""
    out = {"relation": layout.relation, "column": column, "message": message, "row": row}
    if layout.file is not None:
        out["file"] = table.column(layout.file)[row].as_py()
    return out


# ------------------------------------------------------------------ executors
def frame_rdd(entries: list, spec: dict, parts_n: int, sc=None):
    """The RDD of (dest, records) of the FrameDelta entries [InputBlock, FrameDelta, scatters,
    ready]: each one's DataFrame mapped in Arrow by its partitions' tasks (frame_task); the file
    byte ranges of all of them read by P tasks together (range_task)."""
    from toaster.backends.spark.file_ranges import ByteRanges
    rdds, readers, slots = [], [], {}
    for ib, delta, scatters, _ in entries:
        if isinstance(delta.frame, ByteRanges):
            # piece j of every relation in task j % P: a task per piece per relation cost ~40 %
            # more Spark CPU per step on TPC-H Q3 (4 tasks against 2; parsing a piece is ~20 ms)
            for j, piece in enumerate(delta.frame.pieces):
                slots.setdefault(j % parts_n, []).append((len(readers), piece))
            readers.append((ib, list(scatters), delta.layout.decl))
            continue
        task = frame_task(spec, ib, list(scatters), delta.layout, parts_n)
        rows = map_in_arrow(delta.frame, task, "dest int, payload binary")
        rdds.append(rows.rdd.map(_row_pair))
    if slots:
        work = [slots[j] for j in sorted(slots)]
        rdds.append(sc.parallelize(work, len(work)).mapPartitions(range_task(spec, readers, parts_n)))
    out = rdds[0]
    for r in rdds[1:]:
        out = out.union(r)
    return out


def _row_pair(row):
    return row[0], pickle.loads(row[1])


def frame_task(spec: dict, ib, scatters: list, layout: FrameLayout, parts_n: int):
    """The mapInArrow function of one relation's DataFrame: the partition's record batches are
    checked (canonical_columns), its input block runs on them (native_input.run_input) and each
    destination partition's temps leave as one row (dest, pickled records)."""
    block = _block_runner(spec, ib, scatters, parts_n)

    def run(batches):
        import pyarrow as pa
        got = list(batches)          # drained whole: the worker is then reused
        if not got or not sum(b.num_rows for b in got):
            return
        table = pa.Table.from_batches(got)
        cols, signs = canonical_columns(table, layout, ib.columns)
        for dest, records in block(cols, signs).items():
            yield pa.RecordBatch.from_arrays([pa.array([dest], pa.int32()),
                                              pa.array([pickle.dumps(records, protocol=5)], pa.binary())],
                                             names=["dest", "payload"])
    return run


def range_task(spec: dict, readers: list, parts_n: int):
    """The mapPartitions function of file byte ranges: a task's items are [(reader, piece)],
    readers [(InputBlock, scatters, declaration)]; each relation's pieces are read from the file
    and parsed by the CLI's reader (file_ranges.read_piece: only the columns its input block
    reads converted), its input block run on them, (dest, records) out. A bad row fails the task
    with its line numbered in the file (a piece knows its first line's number)."""
    blocks = [_block_runner(spec, ib, scatters, parts_n) for ib, scatters, _ in readers]

    def run(slots):
        from toaster.backends.spark.file_ranges import read_piece
        from toaster.runtime.batch import Batch
        mine: dict = {}
        for items in slots:
            for k, piece in items:
                mine.setdefault(k, []).append(piece)
        for k, pieces in sorted(mine.items()):
            ib, _, decl = readers[k]
            needed = tuple(j in set(ib.columns) for j in range(len(decl.columns)))
            got = []
            for piece in pieces:
                try:
                    b = read_piece(decl, piece, needed)
                except InputError as e:
                    raise FrameRowError({"relation": decl.name, "message": e.message, "file": e.file,
                                         "line": e.line, "column": e.column, "exact": True}) from None
                if len(b):
                    got.append(b)
            if got:
                batch = got[0] if len(got) == 1 else Batch.concat(got)
                yield from blocks[k]({j: batch.columns[j] for j in ib.columns}, batch.signs).items()
    return run


def _block_runner(spec: dict, ib, scatters: list, parts_n: int):
    """block(cols, signs) -> {dest partition: records}: the input block run on a task's checked
    columns ({physical position: column}) in a scratch map set of the worker."""
    from toaster.backends.spark import native_exec as nx
    from toaster.backends.spark.native_input import run_input
    scratch = dict(spec, store=f"{spec['store']}-frames")   # the block's own maps, not a view partition

    def block(cols, signs) -> dict:
        import pyarrow as pa
        data = pa.table([cols[j] for j in ib.columns] + [pa.array(signs)],
                        names=[f"c{j}" for j in ib.columns] + ["s"])
        held = []

        def get_nm():
            if not held:
                held.append(nx.module_for(scratch))
                held[0].activate(scratch["store"], 0)
            return held[0]
        out: dict = {}
        run_input(get_nm, data, ib.block, ib.delta, scatters, parts_n, frozenset(), out, [], ib.plan)
        return out
    return block


def map_in_arrow(df, fn, schema: str):
    """DataFrame.mapInArrow. pyspark builds it through pandas_udf, which insists on pandas
    though an Arrow map never uses it: without pandas the same UDF is made directly."""
    try:
        import pandas  # noqa: F401
        return df.mapInArrow(fn, schema)
    except ImportError:
        pass
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.functions import vectorized_udf
    from pyspark.util import PythonEvalType
    udf = vectorized_udf(fn, schema, PythonEvalType.SQL_MAP_ARROW_ITER_UDF, "pandas")
    column = udf(*[df[c] for c in df.columns])
    return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)


# ------------------------------------------------------------------ driver
def collect_batch(decl, df, *, empty_strings: bool = False):
    """A relation's DataFrame batch collected on the driver through Arrow (relations the
    executors do not read), or None when it is empty: checked, with null flags, as in the tasks."""
    from toaster.runtime.batch import Batch
    layout = frame_layout(decl, df, empty_strings=empty_strings)
    keep = list(layout.names) + [getattr(layout, f) for f in _SPECIAL if getattr(layout, f)]
    table = to_arrow(df.select(*keep))
    if table is None or table.num_rows == 0:
        return None
    try:
        if layout.line is not None:       # the CLI's reader, here on the driver
            from toaster.backends.spark.frame_lines import parse_lines
            batch = parse_lines(table, layout, range(len(decl.columns)))
            return batch if len(batch) else None
        cols, signs = canonical_columns(table, layout, range(len(decl.columns)))
    except FrameRowError as e:
        raise located_error(e.payload, decl) from None
    return Batch(decl.name, signs, tuple(cols[j] for j in range(len(decl.columns))))


def to_arrow(df):
    """A DataFrame collected as a pyarrow Table (None when empty)."""
    if hasattr(df, "toArrow"):              # pyspark >= 4.0
        return df.toArrow()
    import pyarrow as pa
    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else None


_PAYLOAD = re.compile(re.escape(ERROR_MARK) + r"\[([A-Za-z0-9+/=]+)\]")


def input_error(exc: BaseException, decls: dict) -> InputError | None:
    """The InputError a failed frame task reported in `exc` (a Spark job's failure), located:
    for a CSV file split the driver reads the file to number the line (only now, on the error
    path) and re-parses it with the CLI's reader for its message and column."""
    found = _PAYLOAD.search(str(exc))
    if found is None:
        return None
    p = json.loads(base64.b64decode(found.group(1)))
    return located_error(p, decls[p["relation"]])


def located_error(p: dict, decl) -> InputError:
    """The InputError of a bad row's payload (FrameRowError), with its file, line and column
    when the payload locates it in a file split."""
    message = p["message"]
    if "file" not in p:
        return InputError(f"{message} (row {p['row'] + 1} of a partition of the DataFrame)")
    if "line" not in p:
        return InputError(f"{message} in {p['file']}")
    if p.get("exact"):                  # a file byte range: the task numbered the line in the file
        return InputError(message, file=p["file"], line=p["line"], column=p["column"])
    from toaster.backends.spark.frame_lines import split_first_line
    path = _local_path(p["file"])
    first = split_first_line(path, p["block"])
    return InputError(message, file=path, line=None if first is None else first + p["line"] - 1, column=p["column"])


def _local_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse
    u = urlparse(uri)
    return unquote(u.path) if u.scheme in ("file", "") else uri
