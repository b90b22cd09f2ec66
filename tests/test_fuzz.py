"""Fuzzing every input path (issue 13 item 7): SQL text derived from the lark grammar, random
bytes as query files, random rows for Engine.insert / apply, random CSV lines. The property is
always: a result equal to DuckDB (where the input is valid), or one clean ToasterError and the
views unchanged -- never another exception, never a hang (a per-example deadline)."""
from __future__ import annotations

import datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark

from toaster.errors import ToasterError
from toaster.pipeline import compile_file, compile_sql
from toaster.testing.oracle import Oracle

GRAMMAR = (Path(__file__).parent.parent / "toaster" / "frontend" / "sql.lark").read_text()
HEADER = ("CREATE STREAM R(A int, B int) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
          "CREATE STREAM S(B int, C string) FROM FILE 's.csv' LINE DELIMITED CSV;\n")
FUZZ = settings(deadline=20_000, suppress_health_check=list(HealthCheck))


def _query_text():
    lk = Lark(GRAMMAR, parser="lalr", start="query_stmt")
    return from_lark(lk, start="query_stmt")


def _compile_or_clean_error(text: str):
    try:
        return compile_sql(text)
    except ToasterError:
        return None


@FUZZ
@given(query=_query_text())
def test_grammar_derived_sql_compiles_or_fails_cleanly(query):
    comp = _compile_or_clean_error(HEADER + query + ";")
    if comp is not None:
        try:
            comp.stage("k3")
        except ToasterError:
            pass


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_as_a_query_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("q") / "q.sql"
    path.write_bytes(data)
    try:
        compile_file(str(path))
    except ToasterError:
        pass


_VALUES = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(max_size=5), st.none(),
                    st.booleans(), st.dates(), st.binary(max_size=3))
_ROWS = st.one_of(st.tuples(_VALUES, _VALUES), st.lists(_VALUES, max_size=4).map(tuple), _VALUES)
_QUERY = HEADER + "SELECT R.A, SUM(R.B * S.B) FROM R, S WHERE R.B = S.B GROUP BY R.A;"


def _snapshot(engine):
    return [(t.name, sorted(t.rows, key=repr)) for t in engine.results()]


@FUZZ
@given(events=st.lists(st.tuples(st.sampled_from(["insert", "delete"]), st.sampled_from(["R", "S", "T"]), _ROWS),
                       max_size=8))
def test_random_tuples_through_the_api(events):
    comp = compile_sql(_QUERY)
    engine = comp.engine("interp")
    oracle = Oracle(list(engine.relations.values()))
    try:
        from collections import Counter
        from toaster.runtime.batch import Batch
        live: Counter = Counter()
        for kind, rel, row in events:
            key = (rel, row if isinstance(row, tuple) else (row,))
            if kind == "delete" and not live[key]:
                continue     # a stream deletes only what it inserted (the oracle's multisets)
            before = _snapshot(engine)
            try:
                getattr(engine, kind)(rel, row)
            except ToasterError:
                assert _snapshot(engine) == before
                continue
            live[key] += 1 if kind == "insert" else -1
            decl = engine.relations[rel]
            oracle.apply(Batch.from_rows(rel, decl.types, [row], signs=[1 if kind == "insert" else -1]))
        from toaster.testing.oracle import compare_results
        for q, sql in zip(comp.queries, comp.oracle_sql):
            got = {r.name: r for r in engine.results()}[q.name]
            assert not compare_results(got, oracle.query(sql)), events
    finally:
        oracle.close()
        engine.close()


_CSV_LINES = st.lists(st.one_of(st.text(max_size=12), st.from_regex(r"-?[0-9]{1,20},-?[0-9.e]{1,6}", fullmatch=True)),
                      max_size=6)


@FUZZ
@given(lines=_CSV_LINES, newline=st.sampled_from(["\n", "\r\n"]))
def test_random_csv_lines(tmp_path_factory, lines, newline):
    from toaster.runtime.csv_source import load_sources
    d = tmp_path_factory.mktemp("csv")
    (d / "r.csv").write_bytes(newline.join(lines).encode("utf-8"))
    comp = compile_sql("CREATE STREAM R(A int, B float) FROM FILE 'r.csv' LINE DELIMITED CSV;\n"
                       "SELECT SUM(A * B) FROM R;")
    engine = comp.engine("interp")
    try:
        try:
            _, streams = load_sources(list(engine.relations.values()), base_dir=str(d))
        except ToasterError:
            return
        for b in streams:
            engine.apply(b)
    finally:
        engine.close()
