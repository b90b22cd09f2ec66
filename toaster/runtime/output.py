"""Printing result tables: 'table' (aligned text), 'csv' and 'json' (DESIGN.md §4).

    print(format_results(engine.results(), "table"))

Values print in their display form: dates as YYYY-MM-DD, strings raw, ints as ints, floats with
repr precision (the shortest text that reads back to the same double) in every format.
"""
from __future__ import annotations

import csv
import io
import json
import math
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
    """The display text of one value of type t (NULL for a NULL)."""
    if v is None:
        return "NULL"
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
            w.writerow(["" if v is None else cell_text(v, t) for v, t in zip(row, r.types)])   # NULL: empty
        blocks.append(buf.getvalue())
    return "\n".join(blocks)


def format_json(results: Sequence[ResultTable]) -> str:
    """A JSON list of ResultTable.to_json() dicts: {"name", "columns", "key_columns", "rows"}.

    One result per line, so large outputs stay greppable. Strict JSON: a non-finite float (a
    division by zero) prints as the string "NaN", "Infinity" or "-Infinity", which every JSON
    parser reads and no finite number prints as.
    """
    if not results:
        return "[]\n"
    return "[\n" + ",\n".join(json_dumps(r.to_json()) for r in results) + "\n]\n"


def json_dumps(obj) -> str:
    return json.dumps(_finite(obj), allow_nan=False)


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


# ------------------------------------------------------------------ --emit changes

def result_changes(before: Sequence[ResultTable], after: Sequence[ResultTable]) -> list:
    """Per result whose rows changed: (result, deleted rows, inserted rows). A row whose values
    changed under the same key is one deletion (old row) and one insertion (new row), as
    Materialize's SUBSCRIBE and Feldera's outputs report updates."""
    old = {r.name: set(r.rows) for r in before}
    out = []
    for r in after:
        prev = old.get(r.name, set())
        cur = set(r.rows)
        deleted = sorted(prev - cur, key=repr)
        inserted = sorted(cur - prev, key=repr)
        if deleted or inserted:
            out.append((r, deleted, inserted))
    return out


def format_changes(batch_no: int, changes: list, fmt: str = "table") -> str:
    """One batch's view changes: JSON lines, or per result `- row` / `+ row` lines."""
    lines = []
    for r, deleted, inserted in changes:
        show = lambda row: [display_value(v, t) for v, t in zip(row, r.types)]
        if fmt == "json":
            lines.append(json_dumps({"batch": batch_no, "name": r.name, "columns": list(r.columns),
                                     "key_columns": r.key_columns,
                                     "deleted": [show(x) for x in deleted],
                                     "inserted": [show(x) for x in inserted]}))
            continue
        sep = "," if fmt == "csv" else " | "
        lines.append(f"batch {batch_no} {r.name}: " + sep.join(r.columns))
        for sign, rows in (("-", deleted), ("+", inserted)):
            for row in rows:
                lines.append(sign + " " + sep.join(cell_text(v, t) for v, t in zip(row, r.types)))
    return "\n".join(lines) + ("\n" if lines else "")
