"""CSV sources read by Spark as DataFrames, for SparkEngine.apply_frames (the API and the
bench's DataFrame path; `--spark-input executors` reads byte ranges instead: file_ranges.py).

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

