"""`python -m bench --in-memory --finance`: the finance queries in llvm tuple mode, input in memory.

The order-book stream interleaves BIDS and ASKS inserts and deletes. Tuple mode gets it (cut
untimed) as `Interleaved` pieces of RUN_PIECE = 1,000 events (a Batch per relation and a tag per
event), all in ONE `apply_many` call to a fresh tuple-mode engine: the native feed walks the tags
and fires the triggers once per event, with no Python per event or per run (as `--in-memory`
feeds TPC-H files). "Tuple as runs" feeds the same events as the runs of consecutive
same-relation events (at most 1,000 each) in one `apply_many`: a batch record per run. Batch mode at batch 1,000 is measured
the SAME way: the stream cut (untimed) into windows of 1,000 events (a Batch per relation each),
all of them in one `apply_many`. A third column keeps what the harness's `--batch-sizes 1` measures:
one `Engine.apply` per event (prebuilt 1-event batches; a Python call per event).

Per query: events/s of each (CPU time, medians of `--repeats` fresh engines) and the ratio tuple /
batch 1,000. Every engine's views are compared with DuckDB's at the end of the stream (a run that
differs is reported WRONG, not timed). Writes OUT/in-memory-finance.md.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

FINANCE_QUERIES = ["fin_vwap", "fin_mst", "fin_axf", "fin_bxa", "fin_psp", "fin_bsv", "fin_spread"]


# a longer run is cut into pieces (same order): one batch's undo log grows with its length, and a
# 55,254-event batch (VWAP's whole stream) cost 7.5 us/event against 5.0 in pieces of 1,000
RUN_PIECE = 1000


def stream_runs(es, relations, limit=None, piece: int = RUN_PIECE) -> list:
    """The stream's events (of `relations`, first `limit`) as the runs of consecutive events of one
    relation, in order (runs longer than `piece` cut into pieces): one Batch per run (a slice when
    its rows are contiguous)."""
    rel, row = es.selected(relations, limit)
    if len(rel) == 0:
        return []
    cuts = np.flatnonzero(np.diff(rel)) + 1
    cuts = np.unique(np.concatenate((cuts, np.arange(piece, len(rel), piece))))
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(rel)]))
    out = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        out.append(_rows(es.per_relation[es.stream_names[int(rel[s])]], row[s:e]))
    return out


def stream_interleaved(es, relations, limit=None, piece: int = RUN_PIECE) -> list:
    """The stream's events (of `relations`, first `limit`) in pieces of `piece` events, each one
    Interleaved: a Batch per relation it touches (its rows in order) and a tag per event."""
    from toaster.runtime.interleaved import Interleaved
    rel, row = es.selected(relations, limit)
    out = []
    for s in range(0, len(rel), piece):
        r, idx = rel[s:s + piece], row[s:s + piece]
        present = np.unique(r)
        tags = np.searchsorted(present, r).astype(np.int8)
        out.append(Interleaved(tuple(_rows(es.per_relation[es.stream_names[int(p)]], idx[r == p])
                                     for p in present), tags))
    return out


def _rows(b, idx):
    """Batch b's rows idx (ascending): a slice when contiguous."""
    lo, hi = int(idx[0]), int(idx[-1]) + 1
    return b.slice(lo, hi) if hi - lo == len(idx) and bool(np.all(np.diff(idx) == 1)) else b.take(idx)


def _timed(comp, tables, batches, one_call: bool) -> tuple[float, object]:
    """(CPU seconds of feeding `batches`, engine): one apply_many call, or one apply per batch."""
    engine = comp.engine("llvm")
    for b in tables:
        engine.apply(b)
    if one_call:
        t = time.process_time()
        engine.apply_many(batches)
        return time.process_time() - t, engine
    apply = engine.apply
    t = time.process_time()
    for b in batches:
        apply(b)
    return time.process_time() - t, engine


def _measure(comp, tables, batches, one_call, repeats, check) -> float | str:
    """Median CPU seconds of `repeats` fresh engines, or 'WRONG: ...' when the views differ."""
    times = []
    for _ in range(repeats):
        cpu, engine = _timed(comp, tables, batches, one_call)
        try:
            problem = check(engine.results())
        finally:
            engine.close()
        if problem is not None:
            return f"WRONG: {problem}"
        times.append(cpu)
    return statistics.median(times)


def measure_finance_query(text: str, es, repeats: int, limit=None) -> dict:
    from bench.harness import ExpectedResults, check_results, stream_relations
    from toaster.pipeline import compile_sql
    rels, comp0 = stream_relations(text)
    stream_rels = rels & set(es.stream_names)
    relations = list(comp0.m3.relations)
    tables = [b for b in es.tables if b.relation in {r.name for r in relations}]
    total = es.count(stream_rels) if limit is None else min(limit, es.count(stream_rels))
    expected = ExpectedResults(es, relations, stream_rels, tuple(comp0.oracle_sql))(total)
    runs = stream_runs(es, stream_rels, total)
    mixed = stream_interleaved(es, stream_rels, total)
    windows = [b for group in es.batches(1000, stream_rels, total) for b in group]
    singles = [b for group in es.batches(1, stream_rels, total) for b in group]
    tuple_comp, batch_comp = compile_sql(text, mode="tuple"), compile_sql(text, mode="batch")
    queries = list(tuple_comp.queries)

    def check(results):
        return check_results(results, expected, queries)
    return {"events": total, "runs": len(runs),
            "tuple": _measure(tuple_comp, tables, mixed, True, repeats, check),
            "runs_tuple": _measure(tuple_comp, tables, runs, True, repeats, check),
            "batch": _measure(batch_comp, tables, windows, True, repeats, check),
            "per_event": _measure(tuple_comp, tables, singles, False, repeats, check)}


def finance_table(rows: dict, command: str, load: tuple, repeats: int) -> str:
    from toaster.backends.llvm.jit import jit_cpu
    cpu = jit_cpu()[0] or "generic"
    out = [f"Finance queries in memory, llvm (JIT CPU {cpu}); `{command}`; medians of {repeats} fresh engines, CPU time; "
           f"load average before/after {load[0]:.2f} / {load[1]:.2f} on {os.cpu_count()} CPUs. "
           "Tuple: the stream as Interleaved pieces of 1,000 events (a Batch per relation + a tag per event), "
           "one apply_many call, triggers fired per event natively; tuple as runs: the stream as runs of "
           "consecutive same-relation events, one apply_many call. Batch 1,000: windows of 1,000 events, one apply_many call. "
           "One apply per event: tuple mode, a Python apply call per event (the harness's batch size 1).", "",
           "| query | events | runs | tuple (ev/s) | tuple as runs (ev/s) | batch 1,000 (ev/s) | tuple / batch | "
           "one apply per event (ev/s) |",
           "|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        rates = {k: _rate_of(r["events"], r[k]) for k in ("tuple", "runs_tuple", "batch", "per_event")}
        timed = all(isinstance(r[k], float) and r[k] > 0 for k in ("tuple", "batch"))
        ratio = f"{r['batch'] / r['tuple']:.2f}" if timed else "-"
        out.append(f"| {name} | {r['events']:,} | {r['runs']:,} | {rates['tuple']} | {rates['runs_tuple']} | "
                   f"{rates['batch']} | {ratio} | {rates['per_event']} |")
    return "\n".join(out) + "\n"


def _rate_of(events: int, cpu) -> str:
    if isinstance(cpu, str):
        return cpu
    x = events / cpu if cpu > 0 else float("inf")
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} K"


def run_in_memory_finance(args, cfg, command: str) -> int:
    from bench.harness import dataset_stream
    from bench.in_memory import run_each
    from bench.stream import load_event_stream
    si = dataset_stream("finance", cfg)
    es = load_event_stream(si.schema_sql())
    return run_each(args.queries or FINANCE_QUERIES, "finance", "in-memory finance",
                    lambda q: measure_finance_query(si.schema_sql() + "\n" + q.text, es, args.repeats, cfg.max_events),
                    lambda rows, load: finance_table(rows, command, load, args.repeats),
                    os.path.join(cfg.out, "in-memory-finance.md"))
