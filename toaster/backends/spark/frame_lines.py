"""CSV lines parsed in the executors' tasks (file_frames.csv_frame, SparkEngine.apply_frames).

Spark reads a source's lines as text (cheap: line splitting in the JVM); each task parses the
lines of each file split it holds with the CLI's own Arrow reader (toaster.runtime.arrow_csv:
the same types, rules, checks and messages as `--run`; only the columns the input block reads
are converted, every line's field count is checked). A bad line fails the task with its
split's file and start and its line number within the split; the driver turns that into the
line number in the file (`split_first_line`, the only time it reads the file).
"""
from __future__ import annotations

import numpy as np


def joined(lines) -> bytes:
    """The text of an Arrow string array of lines, each ended by a newline: one Arrow kernel
    and a slice of its data buffer, no Python per line."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if pa.types.is_large_string(lines.type):
        lines = lines.cast(pa.string())
    text = pc.binary_join_element_wise(lines.fill_null(""), "", "\n")
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32, count=len(text) + 1, offset=text.offset * 4)
    return text.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]] if len(text) else b""


def parse_lines(table, layout, positions):
    """The toaster Batch of a task's CSV lines (columns LINE, FILE, BLOCK), the columns at
    `positions` converted, parsed split by split (rows of one split are consecutive and in file
    order); a bad line raises FrameRowError with its split and its line number in it."""
    from toaster.backends.spark.frame_input import FrameRowError
    from toaster.runtime.arrow_csv import _layout_from_first_line, _read_chunk
    from toaster.runtime.batch import Batch
    from toaster.runtime.csv_source import csv_settings
    decl = layout.decl
    delim, deletions = csv_settings(decl)
    needed = tuple(j in set(positions) for j in range(len(decl.columns)))
    files = table.column(layout.file).to_numpy(zero_copy_only=False)
    blocks = table.column(layout.block).to_numpy(zero_copy_only=False)
    lines = table.column(layout.line).combine_chunks()
    cuts = np.flatnonzero((files[1:] != files[:-1]) | (blocks[1:] != blocks[:-1])) + 1
    out = []
    for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(lines)]):
        data = joined(lines.slice(start, stop - start))
        how = _layout_from_first_line(decl, data, delim, deletions, needed)
        if how is None:          # only empty lines
            continue
        good, error, _ = _read_chunk(decl, how, data, 1, delim, str(files[start]))
        if error is not None:
            raise FrameRowError({"relation": decl.name, "message": error.message, "file": str(files[start]),
                                 "block": int(blocks[start]), "line": error.line, "column": error.column})
        if good is not None and len(good):
            out.append(good)
    if not out:
        return Batch(decl.name, np.zeros(0, np.int8), tuple(None for _ in decl.columns))
    return out[0] if len(out) == 1 else Batch.concat(out)


def split_first_line(path: str, block: int) -> int | None:
    """The line number, in the file, of the first line of the split starting at byte `block`
    (Hadoop's line reader: a split that does not start the file begins after the first newline
    at or after block - 1); None if the file cannot be read."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    with f:
        if block <= 0:
            return 1
        head = f.read(block - 1)
        rest = f.readline()           # up to the newline ending the previous split's last line
        return head.count(b"\n") + 1 + (1 if rest.endswith(b"\n") else 0)
