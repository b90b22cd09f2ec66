"""A/B of environment variants in one process: `python -m bench.finance_ab QUERY REPEATS MODES [VARIANT ...]`.

MODES: tuple,batch (the bench's `--in-memory --finance` pieces of 1,000 interleaved events for
tuple mode, windows of 1,000 for batch mode); VARIANT: `NAME=value;NAME2=value` environment
settings in force while a variant is compiled and run (e.g. `TOASTER_RIX_MEMO=off`), "" for none.
Every variant is compiled (and JIT-compiled) first, then the rounds run the variants in turn (a
fresh engine each), so load drifts hit them alike. Prints per variant and mode the median and best
events/s and the median CPU ns per event; every run's views are checked against DuckDB. Uses the
100,000-line order book in `--data-dir` (default bench-results/data).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def _env(variant: str) -> dict:
    return dict(kv.split("=", 1) for kv in variant.split(";")) if variant else {}


def main(argv=None) -> int:
    from bench.harness import BenchConfig, ExpectedResults, check_results, dataset_stream, find_query, stream_relations
    from bench.in_memory_finance import stream_interleaved
    from bench.stream import load_event_stream
    from toaster.pipeline import compile_sql
    ap = argparse.ArgumentParser(prog="python -m bench.finance_ab")
    ap.add_argument("query")
    ap.add_argument("repeats", type=int)
    ap.add_argument("modes")
    ap.add_argument("variants", nargs="*")
    ap.add_argument("--data-dir", default="bench-results/data")
    ap.add_argument("--finance-events", type=int, default=100_000)
    args = ap.parse_args(argv)
    cfg = BenchConfig()
    cfg.finance_events, cfg.data_dir = args.finance_events, args.data_dir
    si = dataset_stream("finance", cfg)
    es = load_event_stream(si.schema_sql())
    text = si.schema_sql() + "\n" + find_query(args.query).text
    rels, comp0 = stream_relations(text)
    rels &= set(es.stream_names)
    relations = list(comp0.m3.relations)
    tables = [b for b in es.tables if b.relation in {r.name for r in relations}]
    total = es.count(rels)
    expected = ExpectedResults(es, relations, rels, tuple(comp0.oracle_sql))(total)
    feeds = {"tuple": stream_interleaved(es, rels, total),
             "batch": [b for group in es.batches(1000, rels, total) for b in group]}
    variants = args.variants or [""]
    comps = {}
    for v in variants:
        for mode in args.modes.split(","):
            saved = {k: os.environ.get(k) for k in _env(v)}
            os.environ.update(_env(v))
            try:
                c = compile_sql(text, mode=mode)
                c.engine("llvm").close()            # compiled and JIT-compiled before timing
                comps[(v, mode)] = c
            finally:
                for k, old in saved.items():
                    os.environ.pop(k) if old is None else os.environ.__setitem__(k, old)
    times: dict = {k: [] for k in comps}
    for _ in range(args.repeats):
        for (v, mode), c in comps.items():
            saved = {k: os.environ.get(k) for k in _env(v)}
            os.environ.update(_env(v))
            try:
                e = c.engine("llvm")
                for b in tables:
                    e.apply(b)
                t = time.process_time()
                e.apply_many(feeds[mode])
                times[(v, mode)].append(time.process_time() - t)
                problem = check_results(e.results(), expected, list(c.queries))
                e.close()
                if problem is not None:
                    raise SystemExit(f"{args.query} {v!r} {mode}: WRONG: {problem}")
            finally:
                for k, old in saved.items():
                    os.environ.pop(k) if old is None else os.environ.__setitem__(k, old)
    for (v, mode), ts in times.items():
        med = statistics.median(ts)
        print(f"{args.query} {mode} {v or '(default)'}: {total / med / 1e6:.3f} M ev/s median, "
              f"{total / min(ts) / 1e6:.3f} M best, {med / total * 1e9:.0f} ns/event ({total:,} events)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
