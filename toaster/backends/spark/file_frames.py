"""CSV sources read by Spark as DataFrames, for SparkEngine.apply_frames (`--run --backend spark
--spark-input executors`, the bench's DataFrame path).

`csv_frame` reads a relation's files with `spark.read.csv`: the declaration's schema and
delimiter, no quoting, with `deletions := 'true'` lines `seq|op|cols...` (streaming.spark_schema
is the same schema). Spark's parser runs PERMISSIVE with a corrupt-record column, so a malformed
line reaches the tasks, which fail the step naming it (frame_input: the file, the start of the
task's split and the row's index in it; the driver then finds the line and re-parses it with
the CLI's own reader for the message and the column). Every field of a line is parsed and
checked (Spark's column pruning is defeated on purpose: it would skip the field count). As in
`--stream-dir`, Spark decides what parses: a trailing delimiter (dbgen's) is a malformed line
here, unlike the CLI's readers; an empty field of a non-string column is an error, an empty
string field is ''.
"""
from __future__ import annotations

from toaster.backends.spark.frame_input import BLOCK, CORRUPT, FILE, OP


def csv_frame(spark, decl, paths):
    """The DataFrame of relation `decl`'s CSV file(s) `paths` (a path or a list), with the
    declared columns under their names, OP with deletions, and FILE, BLOCK and CORRUPT for the
    location of a bad line. Lazy: no Spark job until the step runs."""
    from pyspark.sql import types as T
    from toaster.backends.spark.streaming import OP_COLUMN, _column, spark_schema
    from toaster.runtime.csv_source import csv_settings
    delim, deletions = csv_settings(decl)
    schema = T.StructType(spark_schema(decl).fields + [T.StructField(CORRUPT, T.StringType())])
    df = (spark.read.schema(schema).option("sep", delim).option("quote", "").option("header", "false")
          .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
          .option("dateFormat", "yyyy-MM-dd").option("ignoreLeadingWhiteSpace", "false")
          .option("ignoreTrailingWhiteSpace", "false")
          .csv([str(p) for p in paths] if isinstance(paths, (list, tuple)) else str(paths)))
    # built as SQL text: one py4j call, not one per Column operation (~0.1 s of driver CPU a step)
    cols = [f"`{_column(decl.name, c.name)}` AS `{c.name}`" for c in decl.columns]
    if deletions:
        cols.append(f"`{OP_COLUMN}` AS `{OP}`")
    # Spark's parser checks a line's field count and fills CORRUPT only when the scan needs every
    # column (else it prunes, and a short line just has nulls): CORRUPT is made to read them all
    # (isNull, or an impossible length for strings, whose empty fields are null)
    every = " OR ".join(f"length(`{f.name}`) < 0" if isinstance(f.dataType, T.StringType) else f"`{f.name}` IS NULL"
                        for f in schema.fields if f.name != CORRUPT)
    corrupt = f"CASE WHEN `{CORRUPT}` IS NOT NULL OR {every} THEN coalesce(`{CORRUPT}`, '') END AS `{CORRUPT}`"
    return df.selectExpr(*cols, f"_metadata.file_path AS `{FILE}`", f"_metadata.file_block_start AS `{BLOCK}`",
                         corrupt)


def source_frames(spark, decls, base_dir: str | None = None) -> dict:
    """{relation: csv_frame of its FROM FILE source} for the streams in `decls` (declaration
    order); a stream without a readable source is an InputError, as the CLI's readers say."""
    import os
    from toaster.errors import InputError, UnsupportedError
    from toaster.runtime.csv_source import _check_readable, resolve_path
    out = {}
    for decl in decls:
        if decl.source is None:
            raise InputError(f"relation {decl.name} has no FROM FILE source")
        if decl.source.adaptor != "csv":
            raise UnsupportedError(f"DataFrame input (--spark-input executors) of the {decl.source.adaptor} adaptor")
        _check_readable(decl, base_dir)
        out[decl.name] = csv_frame(spark, decl, os.path.abspath(resolve_path(decl.source.path, base_dir)))
    return out
