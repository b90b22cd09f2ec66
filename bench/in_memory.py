"""`python -m bench --in-memory`: llvm trigger throughput in tuple mode, input already in memory.

As the issue's side-by-side with DBToaster's C++ program: TPC-H (`--scale`, default 0.1)
insert-only, relation by relation (dbgen's tables as CSV files, read into memory first, as
`--run` reads them: only the relations and columns the query uses), then fed to a fresh llvm
engine in tuple mode, one whole relation file per `Engine.apply` call, in declaration order
(e.g. all of CUSTOMER, then ORDERS, then LINEITEM). Tables (NATION, REGION) are loaded
untimed first. Per query (default Q3, Q6, Q17, and Q1): events/s of `apply` (CPU time), of the
native trigger code alone (the engine's native entry points timed, CPU), and the Python share
of apply (apply minus native). Medians of `--repeats` fresh engines. Writes OUT/in-memory.md.
"""
from __future__ import annotations

import os
import statistics
import time

IN_MEMORY_QUERIES = ["tpch_q3", "tpch_q6", "tpch_q17", "tpch_q1"]
TARGETS = {"tpch_q3": 8e6, "tpch_q6": 100e6, "tpch_q17": 400e3}     # issue 11, events/s


def load_relations(comp, engine, base_dir=None):
    """(table batches, stream batches relation by relation): whole files, only what engine reads."""
    from toaster.runtime.csv_source import read_source
    used = engine.relations_needed()
    tables, streams = [], []
    for d in comp.m3.relations:
        if d.source is None or (d.kind != "table" and d.name not in used):
            continue
        batches = read_source(d, None, base_dir, engine.columns_needed(d.name))
        (tables if d.kind == "table" else streams).extend(batches)
    return tables, streams


def time_native(engine):
    """Time the llvm engine's native trigger code in CPU time (its entry times itself); returns
    the function giving the seconds so far."""
    engine.time_native(time.CLOCK_PROCESS_CPUTIME_ID)
    return engine.native_seconds


def run_once(comp, tables, streams, **engine_options) -> tuple[int, float, float, object]:
    """(events, apply CPU seconds, native CPU seconds, engine) of one fresh llvm engine; the
    engine's JIT CPU seconds are in engine.jit_cpu."""
    t = time.process_time()
    engine = comp.engine("llvm", **engine_options)
    engine.jit_cpu = time.process_time() - t
    native = time_native(engine)
    for b in tables:
        engine.apply(b)
    native0 = native()
    events, cpu = 0, 0.0
    for b in streams:
        t = time.process_time()
        engine.apply(b)
        cpu += time.process_time() - t
        events += len(b)
    return events, cpu, native() - native0, engine


def measure_query(text: str, repeats: int, base_dir=None, profile: str | None = None, **engine_options) -> dict:
    from toaster.pipeline import compile_sql
    comp = compile_sql(text, mode="tuple")
    probe = comp.engine("llvm")
    tables, streams = load_relations(comp, probe, base_dir)
    probe.close()
    runs = []
    for _ in range(repeats):
        events, cpu, native, engine = run_once(comp, tables, streams, **engine_options)
        runs.append((cpu, native, engine.jit_cpu))
        engine.close()
    if profile:
        import cProfile
        engine = comp.engine("llvm")
        for b in tables:
            engine.apply(b)
        pr = cProfile.Profile(time.process_time)
        for b in streams:
            pr.runcall(engine.apply, b)
        pr.dump_stats(profile)
    cpu = statistics.median(r[0] for r in runs)
    native = statistics.median(r[1] for r in runs)
    return {"events": events, "relations": " → ".join(dict.fromkeys(b.relation for b in streams)),
            "apply_cpu": cpu, "native_cpu": native, "jit_cpu": statistics.median(r[2] for r in runs),
            "python_share": max(0.0, cpu - native) / cpu if cpu > 0 else 0.0}


def in_memory_table(rows: dict, command: str, load: tuple, repeats: int) -> str:
    out = [f"In-memory trigger throughput, llvm tuple mode, TPC-H insert-only relation by relation, one "
           f"whole file per apply (medians of {repeats}); `{command}`; load average before/after "
           f"{load[0]:.2f} / {load[1]:.2f} on {os.cpu_count()} CPUs. CPU time.", "",
           "| query | relations | events | apply (events/s) | native only (events/s) | Python share | target "
           "| JIT (s CPU) |",
           "|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        rate = r["events"] / r["apply_cpu"] if r["apply_cpu"] > 0 else float("inf")
        nat = r["events"] / r["native_cpu"] if r["native_cpu"] > 0 else float("inf")
        target = TARGETS.get(name)
        out.append(f"| {name} | {r['relations']} | {r['events']:,} | {_rate(rate)} | {_rate(nat)} | "
                   f"{100 * r['python_share']:.0f}% | {'-' if target is None else '>= ' + _rate(target)} | "
                   f"{r['jit_cpu']:.2f} |")
    return "\n".join(out) + "\n"


def _rate(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} K"


def run_in_memory(args, cfg, command: str) -> int:
    from bench.end_to_end import write_csv_tables
    from bench.tpch import generate_tables
    scale = args.scale if args.scale is not None else 0.1
    base = os.path.abspath(cfg.data_dir or os.path.join(cfg.out, "data"))
    tbl_dir = generate_tables(os.path.join(base, f"tbl-sf{scale:g}"), scale)
    schema = write_csv_tables(tbl_dir, os.path.join(base, f"e2e-csv-sf{scale:g}"))
    options = {} if args.opt_level is None else {"opt_level": args.opt_level}
    return run_each(args.queries or IN_MEMORY_QUERIES, "tpch", "in-memory",
                    lambda q: measure_query(schema + "\n" + q.text, args.repeats, **options),
                    lambda rows, load: in_memory_table(rows, command, load, args.repeats),
                    os.path.join(cfg.out, "in-memory.md"))


def run_each(names, dataset: str, label: str, measure, table, path: str) -> int:
    """measure(query) for each named query of `dataset`; table(rows, (load before, after)) is
    written to path and printed."""
    from bench.harness import find_query
    load0 = os.getloadavg()[0]
    rows = {}
    for name in names:
        q = find_query(name)
        if q.dataset != dataset:
            continue
        print(f"{label} {q.name}", flush=True)
        rows[q.name] = measure(q)
    report = table(rows, (load0, os.getloadavg()[0]))
    with open(path, "w") as f:
        f.write(report)
    print(report)
    return 0
