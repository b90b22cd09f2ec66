"""`python -m bench`: run the benchmark and write results.csv, results.md and (--plot) PNGs.

    python -m bench --quick                       # a few minutes on 2 cores
    python -m bench --queries tpch_q3,fin_spread --backends interp,llvm,calc --batch-sizes 1,100,10000 \\
                    --scale 0.1 --time-limit 60 --plot --out bench-results
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

from bench.harness import BenchConfig, available_queries, run_benchmark
from toaster.errors import ToasterError

QUICK_QUERIES = ["tpch_q6", "tpch_q3", "tpch_q12", "fin_bsv", "fin_spread"]
BASELINES = ("duckdb", "sparksql")


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in _list(text)]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="small preset: SF 0.01 TPC-H and a 20,000-event order book, 5 queries, "
                         "interp/llvm/spark with strategies hoivm, ivm, rep (+calc on single-relation queries), batch sizes "
                         "1,100,1000, 30,000 events and 2 s per run; "
                         "other flags given explicitly override it")
    ap.add_argument("--queries", type=_list, help=f"comma-separated (available: {', '.join(available_queries())}) "
                    "or paths to .sql files with a '-- dataset:' header; 'all' for every query")
    ap.add_argument("--backends", type=_list, help="comma-separated: interp, llvm, calc, imp, spark (default interp,llvm)")
    ap.add_argument("--strategies", type=_list, help="maintenance strategies: hoivm, ivm, rep, naive, noindex (hoivm without m3_range_index), nocache (hoivm without range indexes or view caches), nofactor (hoivm without m3_factorize) (default hoivm)")
    ap.add_argument("--batch-sizes", type=_ints, help="comma-separated (default 1,100,1000); 1 = single-tuple triggers")
    ap.add_argument("--mode", choices=["auto", "tuple", "batch"], default=None,
                    help="trigger mode (auto: tuple for batch size 1, else batch; spark is always batch)")
    ap.add_argument("--scale", type=float, help="TPC-H scale factor (default 0.01)")
    ap.add_argument("--seed", type=int, help="stream seed (default 1)")
    ap.add_argument("--active-orders", type=int, help="active ORDERS size (default 300,000 x scale)")
    ap.add_argument("--active-lineitems", type=int, help="active LINEITEM size (default 1,200,000 x scale)")
    ap.add_argument("--finance-events", type=int, help="order-book log length (default 50,000)")
    ap.add_argument("--brokers", type=int, help="broker count of the order book (default 10)")
    ap.add_argument("--time-limit", type=float, help="seconds of feeding per run (default 10)")
    ap.add_argument("--max-events", type=int, help="use only this prefix of each query's stream")
    ap.add_argument("--spark", action="store_true", help="add the spark backend (slow: ~0.1-1 s per batch)")
    ap.add_argument("--baselines", type=_list,
                    help=f"re-evaluation baselines run on the same stream: comma-separated {', '.join(BASELINES)} "
                         "(default duckdb; sparksql = Spark SQL re-running the query after each batch, in the "
                         "same SparkSession as the spark backend)")
    ap.add_argument("--no-duckdb", action="store_true", help="skip the DuckDB baseline (leave duckdb out of --baselines)")
    ap.add_argument("--duckdb-threads", type=int, help="DuckDB threads (default 1, like toaster)")
    ap.add_argument("--plot", action="store_true", help="write rates_bs<N>.png and sweep.png")
    ap.add_argument("--out", help="output directory (default bench-results)")
    ap.add_argument("--data-dir", help="where generated streams are cached (default OUT/data)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument("--master", help="Spark master URL")
    ap.add_argument("--soak", action="store_true",
                    help="memory soak instead of the benchmark: a sliding-window stream with deletions and "
                         "every string new, RSS sampled over time per backend (bench/soak.py); uses "
                         "--backends (default interp,llvm), --max-events (default 2,000,000), --time-limit "
                         "(default 1800 s per backend), --out")
    ap.add_argument("--soak-window", type=int, default=100_000, help="active rows of the soak stream")
    ap.add_argument("--soak-batch", type=int, default=10_000, help="updates per batch of the soak stream")
    ap.add_argument("--paper", choices=["vldbj-fig8", "hotdog-fig7"],
                    help="a paper's table with its published numbers beside toaster's (bench/paper.py): "
                         "vldbj-fig8 = strategies rep/ivm/hoivm/naive in tuple mode; hotdog-fig7 = batch-size "
                         "sweep 1..100,000; flags given explicitly override its settings")
    ap.add_argument("--end-to-end", action="store_true",
                    help="toaster llvm --run on TPC-H CSV files vs DuckDB reading the same files and computing "
                         "the answer once (bench/end_to_end.py; --scale, default 0.1, and --queries apply)")
    ap.add_argument("--ingest", action="store_true",
                    help="CSV ingest lines/s per TPC-H stream file, one thread and threads, against DuckDB's "
                         "read_csv (bench/ingest.py; --scale, default 0.1, and --queries for LINEITEM's "
                         "projections apply); writes OUT/ingest.md")
    ap.add_argument("--in-memory", action="store_true",
                    help="llvm trigger throughput in tuple mode over batches loaded into memory first, relation "
                         "by relation (bench/in_memory.py; --scale, default 0.1, and --queries apply); "
                         "writes OUT/in-memory.md")
    ap.add_argument("--finance", action="store_true",
                    help="with --in-memory: the finance queries (bench/in_memory_finance.py): tuple mode as one "
                         "apply_many of the stream's same-relation runs vs batch 1,000 fed the same way "
                         "(--finance-events, --max-events and --queries apply); writes OUT/in-memory-finance.md")
    ap.add_argument("--repeats", type=int, default=3, help="--ingest / --in-memory / --end-to-end: runs per measurement (median)")
    ap.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), default=None,
                    help="--in-memory: the llvm engine's --opt-level (default: the engine's, 2)")
    return ap


def config_from_args(args) -> BenchConfig:
    cfg = BenchConfig()
    if args.quick:
        cfg.queries = list(QUICK_QUERIES)
        # every backend, spark included (its runs are cut at the time limit like the others)
        cfg.backends = ["interp", "llvm", "calc", "spark"]
        cfg.strategies = ["hoivm", "ivm", "rep"]
        cfg.batch_sizes = [1, 100, 1000]
        cfg.scale = 0.01
        cfg.finance_events = 20_000
        cfg.time_limit = 2.0
        cfg.max_events = 30_000
        cfg.duckdb_windows = 4
        cfg.reeval_max_relations = 1
    for name in ("queries", "backends", "strategies", "batch_sizes", "mode", "scale", "seed", "active_orders",
                 "active_lineitems", "finance_events", "brokers", "time_limit", "max_events", "out",
                 "data_dir", "duckdb_threads", "master"):
        v = getattr(args, name)
        if v is not None:
            setattr(cfg, name, v)
    if args.paper:
        from bench.paper import configure
        explicit = {n for n in ("queries", "backends", "strategies", "batch_sizes", "mode")
                    if getattr(args, n) is not None}
        configure(args.paper, cfg, explicit)
    if cfg.queries == ["all"]:
        cfg.queries = available_queries()
    if args.spark and "spark" not in cfg.backends:
        cfg.backends = cfg.backends + ["spark"]
    baselines = args.baselines if args.baselines is not None else ["duckdb"]
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise ToasterError(f"unknown baseline(s) {', '.join(unknown)} (available: {', '.join(BASELINES)})")
    cfg.duckdb = "duckdb" in baselines and not args.no_duckdb
    cfg.sparksql = "sparksql" in baselines
    cfg.progress = not args.no_progress and sys.stderr.isatty()
    return cfg


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.soak:
        return soak_main(args)
    try:
        cfg = config_from_args(args)
    except ToasterError as e:
        print(str(e), file=sys.stderr)
        return 2
    from bench.report import full_report, markdown_table, plot_rates, plot_sweep, write_csv
    os.makedirs(cfg.out, exist_ok=True)
    if args.end_to_end:
        from bench.end_to_end import run_end_to_end
        return run_end_to_end(args, cfg)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    if args.ingest:
        from bench.ingest import run_ingest
        return run_ingest(args, cfg, command)
    if args.in_memory and args.finance:
        from bench.in_memory_finance import run_in_memory_finance
        return run_in_memory_finance(args, cfg, command)
    if args.in_memory:
        from bench.in_memory import run_in_memory
        return run_in_memory(args, cfg, command)
    t0 = time.perf_counter()
    try:
        results, info = run_benchmark(cfg, log=lambda s: print(s, file=sys.stderr, flush=True))
    except ToasterError as e:
        print(str(e), file=sys.stderr)
        return 2
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    write_csv(results, os.path.join(cfg.out, "results.csv"))
    report = full_report(results, info, command)
    with open(os.path.join(cfg.out, "results.md"), "w") as f:
        f.write(report)
    print(markdown_table(results))
    if args.plot:
        paths = plot_rates(results, cfg.out)
        sweep = plot_sweep(results, os.path.join(cfg.out, "sweep.png"))
        paths += [sweep] if sweep else []
        print("plots: " + ", ".join(paths))
    if args.paper:
        from bench.paper import write_paper
        print("paper table: " + ", ".join(write_paper(args.paper, results, cfg.out, args.plot)))
    wrong = [r for r in results if r.status == "WRONG"]
    print(f"{len(results)} runs in {time.perf_counter() - t0:.0f} s; results in {cfg.out}/results.csv, "
          f"{cfg.out}/results.md" + (f"; {len(wrong)} WRONG" if wrong else ""))
    return 1 if wrong else 0


def soak_main(args) -> int:
    from bench.soak import run_soak, soak_table
    backends = args.backends or ["interp", "llvm"]
    events = args.max_events or 2_000_000
    out = args.out or "bench-results"
    samples = run_soak(backends, events, args.soak_window, args.soak_batch, args.time_limit or 1800.0, out,
                       log=lambda s: print(s, file=sys.stderr, flush=True))
    print(soak_table(samples, events, args.soak_window, args.soak_batch))
    print(f"samples in {out}/soak.csv, table in {out}/soak.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
