"""Result printing: every format reads back to the values of the ResultTables it printed."""
from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, strategies as st

from toaster.engine import ResultTable
from toaster.runtime.csv_source import parse_field
from toaster.runtime.output import format_results
from toaster.types import DATE, FLOAT, INT, STRING

TYPE_VALUES = {
    INT: st.integers(-10**12, 10**12),
    FLOAT: st.floats(allow_nan=False, allow_infinity=False),
    DATE: st.dates().map(lambda d: d.year * 10000 + d.month * 100 + d.day).filter(lambda v: v >= 10000101),
    STRING: st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8),
}


@st.composite
def result_tables(draw, name="QUERY_1"):
    nkey = draw(st.integers(0, 2))
    key_types = [draw(st.sampled_from([INT, DATE, STRING, FLOAT])) for _ in range(nkey)]
    val_types = [draw(st.sampled_from([INT, FLOAT])) for _ in range(draw(st.integers(1, 2)))]
    types = tuple(key_types + val_types)
    columns = tuple(f"C{i}" for i in range(len(types)))
    rows = draw(st.lists(st.tuples(*(TYPE_VALUES[t] for t in types)), max_size=5 if nkey else 1,
                         unique_by=lambda r: r[:nkey]))
    return ResultTable(name, columns, types, nkey, tuple(rows))


tables = st.lists(result_tables(), min_size=1, max_size=3).map(
    lambda ts: [ResultTable(f"QUERY_{i + 1}", t.columns, t.types, t.key_columns, t.rows) for i, t in enumerate(ts)])


def read_back(text, t):
    """The runtime value of a printed cell: dates from YYYY-MM-DD, floats exactly (repr precision)."""
    return parse_field(t, text)


@given(tables)
def test_json_round_trip(results):
    data = json.loads(format_results(results, "json"))
    assert [d["name"] for d in data] == [r.name for r in results]
    for d, r in zip(data, results):
        assert d["columns"] == list(r.columns) and d["key_columns"] == r.key_columns
        back = [tuple(read_back(v, t) if t == DATE else v for v, t in zip(row, r.types)) for row in d["rows"]]
        assert back == [tuple(row) for row in r.rows]


@given(tables)
def test_csv_round_trip(results):
    text = format_results(results, "csv")
    # results are separated by one blank line; a string cell never contains a raw newline here
    blocks = list(csv.reader(io.StringIO(text)))
    parsed, current = [], []
    for rec in blocks:
        if rec == [] :
            parsed.append(current)
            current = []
        else:
            current.append(rec)
    parsed.append(current)
    assert len(parsed) == len(results)
    for recs, r in zip(parsed, results):
        assert recs[0] == list(r.columns)
        back = [tuple(read_back(c, t) for c, t in zip(rec, r.types)) for rec in recs[1:]]
        assert back == [tuple(row) for row in r.rows]


@given(tables)
def test_table_layout(results):
    text = format_results(results, "table")
    blocks = text.rstrip("\n").split("\n\n")
    assert len(blocks) == len(results)
    for block, r in zip(blocks, results):
        lines = block.split("\n")
        assert lines[0] == f"{r.name}:"
        header, rule, body = lines[1], lines[2], lines[3:]
        assert [h.strip() for h in header.split(" | ")] == list(r.columns)
        widths = [len(seg) for seg in rule.split("-+-")]
        if not r.rows:
            assert body == ["(no rows)"]
            continue
        assert len(body) == len(r.rows)
        for line, row in zip(body, r.rows):
            cells = line.split(" | ") if not any(t == STRING for t in r.types) else None
            if cells is None:
                continue                  # strings may contain ' | '; checked by the other formats
            assert [read_back(c.strip(), t) for c, t in zip(cells, r.types)] == list(row)
            # numbers are right-aligned to the column width
            for c, t, w in zip(cells, r.types, widths):
                if t in (INT, FLOAT):
                    assert len(c) == w and not c.endswith(" ")


def test_unknown_format():
    with pytest.raises(ValueError, match="table, csv, json"):
        format_results([], "xml")


def test_json_is_strict_with_non_finite_floats():
    import json as _json
    from toaster.runtime.output import json_dumps
    text = json_dumps({"rows": [[1.5, float("nan"), float("inf"), float("-inf")]]})
    assert _json.loads(text) == {"rows": [[1.5, "NaN", "Infinity", "-Infinity"]]}
    assert "NaN," not in text.replace('"NaN"', "")


def test_emit_changes_replays_to_the_final_snapshot(tmp_path):
    import json as _json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    run = lambda *a: subprocess.run([sys.executable, "-m", "toaster.pipeline", "examples/rst.sql", "--run",
                                     "--output", "json", "--batch-size", "4", *a], cwd=root,
                                    capture_output=True, text=True, timeout=300)
    snap, changes = run(), run("--emit", "changes")
    assert snap.returncode == changes.returncode == 0, changes.stderr
    state: dict = {}
    batches = set()
    for line in changes.stdout.splitlines():
        c = _json.loads(line)
        batches.add(c["batch"])
        rows = state.setdefault(c["name"], set())
        for r in c["deleted"]:
            rows.remove(tuple(r))
        rows.update(tuple(r) for r in c["inserted"])
    assert len(batches) > 1
    final = {r["name"]: {tuple(x) for x in r["rows"]} for r in _json.loads(snap.stdout)}
    assert state == final
    assert "events in" in changes.stderr and "events/s" in changes.stderr   # the closing summary


def test_run_warns_when_no_relation_has_a_source(tmp_path):
    import subprocess
    import sys
    q = tmp_path / "q.sql"
    q.write_text("CREATE STREAM R(A int);\nSELECT SUM(R.A) FROM R;\n")
    r = subprocess.run([sys.executable, "-m", "toaster.pipeline", str(q), "--run"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0
    assert "warning: no relation" in r.stderr
