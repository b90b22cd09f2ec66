"""CSV sources read by Spark as DataFrames, for SparkEngine.apply_frames (`--run --backend spark
--spark-input executors`, the bench's DataFrame path).

`csv_frame` reads a relation's files with `spark.read.text`: each line as it is, with its file
and the byte offset where its split starts (`_metadata`). The tasks parse them with the CLI's
own Arrow reader (frame_lines.py): the same rules as `--run` (the declared delimiter, no
quoting, one trailing delimiter, empty lines skipped, `seq|op|...` with deletions), the same
checks and messages, file:line:column included. Measured against `spark.read.csv` (which
must parse every field to check a line's field count: its column pruning skips that check),
text lines parsed by Arrow in the task cost a third of the Spark CPU (docs/spark-engine.md).
"""
from __future__ import annotations

from toaster.backends.spark.frame_input import BLOCK, FILE, LINE


def csv_frame(spark, paths):
    """The DataFrame of CSV file(s) `paths` (a path or a list) as lines: LINE, FILE, BLOCK, for
    the relation they are applied to (its declaration says how to parse them). Lazy: no Spark
    job until the step runs."""
    reader = spark.read.option("lineSep", "\n")
    df = reader.text([str(p) for p in paths] if isinstance(paths, (list, tuple)) else str(paths))
    return df.selectExpr(f"value AS {LINE}", f"_metadata.file_path AS {FILE}",       # SQL text: one py4j call
                         f"_metadata.file_block_start AS {BLOCK}")


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
        out[decl.name] = csv_frame(spark, os.path.abspath(resolve_path(decl.source.path, base_dir)))
    return out
