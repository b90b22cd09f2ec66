"""Printing result tables: 'table' (aligned text), 'csv' and 'json' (DESIGN.md §4).

    print(format_results(engine.results(), "table"))

Values print in their display form: dates as YYYY-MM-DD, strings raw, ints as ints, floats with
repr precision (the shortest text that reads back to the same double) in every format.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Sequence

from toaster.engine import ResultTable, display_value
from toaster.types import FLOAT

FORMATS = ("table", "csv", "json")


def format_results(results: Sequence[ResultTable], fmt: str = "table") -> str:
    """All results in one of FORMATS; the text ends with a newline."""
    if fmt == "table":
        return format_table(results)
    if fmt == "csv":
        return format_csv(results)
    if fmt == "json":
        return format_json(results)
    raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")


def cell_text(v, t) -> str:
    """The display text of one value of type t."""
    v = display_value(v, t)
    if t == FLOAT:
        return repr(float(v))
    return str(v)


def format_table(results: Sequence[ResultTable]) -> str:
    """Per result: a title line with its name, a header, a rule, then right-aligned numbers and
    left-aligned strings/dates; blank line between results."""
    blocks = []
    for r in results:
        texts = [[cell_text(v, t) for v, t in zip(row, r.types)] for row in r.rows]
        widths = [len(c) for c in r.columns]
        for row in texts:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]
        numeric = [t.is_numeric for t in r.types]

        def line(cells):
            parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)]
            return " | ".join(parts).rstrip()

        out = [f"{r.name}:"]
        if r.columns:
            out.append(line(list(r.columns)))
            out.append("-+-".join("-" * w for w in widths))
        out.extend(line(row) for row in texts)
        if not texts:
            out.append("(no rows)")
        blocks.append("\n".join(out))
    return "\n\n".join(blocks) + "\n"


def format_csv(results: Sequence[ResultTable]) -> str:
    """Per result: a header row of column names, then the rows; results separated by a blank line."""
    blocks = []
    for r in results:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(r.columns)
        for row in r.rows:
            w.writerow([cell_text(v, t) for v, t in zip(row, r.types)])
        blocks.append(buf.getvalue())
    return "\n".join(blocks)


def format_json(results: Sequence[ResultTable]) -> str:
    """A JSON list of ResultTable.to_json() dicts: {"name", "columns", "key_columns", "rows"}.

    One result per line, so large outputs stay greppable. Non-finite floats print as
    NaN / Infinity (Python's json dialect), since division by zero may produce them.
    """
    if not results:
        return "[]\n"
    return "[\n" + ",\n".join(json.dumps(r.to_json()) for r in results) + "\n]\n"
