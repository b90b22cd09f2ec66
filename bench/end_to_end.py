"""`python -m bench --end-to-end`: toaster against DuckDB from the same CSV files to the answer.

For each TPC-H query (default Q1, Q3, Q6, Q17) at --scale (default 0.1): dbgen's tables are
written once as '|'-delimited CSV files (insert-only streams, NATION/REGION as tables), then
  toaster: `python -m toaster.pipeline Q.sql --backend llvm --run` in a fresh process (compile,
           read every file, keep the view fresh after every tuple, print the answer), wall time:
           cold (`--jit-cache off`: LLVM optimizes and compiles the program at the opt level
           `--run` picks, toaster.backends.llvm.jit.run_opt_level: the light pipeline, 1, below 512 MiB of input),
           with the JIT cache warm (the machine code of an earlier run loaded, in OUT/jit-cache),
           and cold with `--opt-level 2` (LLVM's O2, the default before);
  DuckDB:  read the same files (read_csv) into tables and run the query once, wall time,
and the table gives both, their ratio (the issue's target: toaster <= 2x DuckDB), and whether
toaster's answers equal DuckDB's. Each is the median of --repeats runs (default 3) after one untimed run (the
files in the OS cache for both; toaster's modules compiled to bytecode: the child runs with
Python's bytecode cache on, in OUT/pycache, even under PYTHONDONTWRITEBYTECODE=1 -- an installed
package has its .pyc files, and compiling ~100 modules from source took ~0.27 s per run). The
CPU seconds (the toaster process, all its threads; DuckDB: the bench process while it runs)
and their ratio are given beside the wall seconds: on a shared machine they are the steadier
number.
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time

E2E_QUERIES = ["tpch_q1", "tpch_q3", "tpch_q6", "tpch_q17"]
_DUCK_TYPES = {"int": "BIGINT", "float": "DOUBLE", "date": "DATE", "string": "VARCHAR"}


def write_csv_tables(tbl_dir: str, csv_dir: str) -> str:
    """dbgen's .tbl files without their trailing '|' (cached); returns the schema SQL over them."""
    from bench.tpch import STREAMS, TABLES, _read_tbl, TPCH_SCHEMA
    os.makedirs(csv_dir, exist_ok=True)
    for r in STREAMS + TABLES:
        path = os.path.join(csv_dir, r.lower() + ".csv")
        if not os.path.exists(path):
            lines = _read_tbl(os.path.join(tbl_dir, r.lower() + ".tbl"))
            with open(path + ".part", "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + ("\n" if lines else ""))
            os.replace(path + ".part", path)
    out = []
    for r in STREAMS + TABLES:
        kind = "STREAM" if r in STREAMS else "TABLE"
        path = os.path.abspath(os.path.join(csv_dir, r.lower() + ".csv"))
        out.append(f"CREATE {kind} {r}({TPCH_SCHEMA[r]})\n  FROM FILE '{path}' LINE DELIMITED "
                   f"CSV (delimiter := '|');")
    return "\n".join(out) + "\n"


def _columns(rel: str) -> dict:
    from bench.tpch import TPCH_SCHEMA
    cols = {}
    for part in TPCH_SCHEMA[rel].split(","):
        name, typ = part.split()
        cols[name] = _DUCK_TYPES[typ.lower()]
    return cols


def duckdb_once(csv_dir: str, oracle_sql, relations) -> tuple[float, list, float]:
    """(seconds for DuckDB to read the relations' CSV files and compute every query once, the
    answer of each query, CPU seconds of this process meanwhile)."""
    import duckdb
    t0, c0 = time.perf_counter(), time.process_time()
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    for r in relations:
        path = os.path.join(csv_dir, r.lower() + ".csv")
        con.execute(f"CREATE TABLE {r} AS SELECT * FROM read_csv(?, delim='|', header=false, "
                    f"columns={_columns(r)!r})", [path])
    answers = [con.execute(q).fetchall() for q in oracle_sql]
    con.close()
    return time.perf_counter() - t0, answers, time.process_time() - c0


def _cell(v):
    """A CSV cell of toaster's output or a DuckDB value, as one comparable value."""
    if isinstance(v, str):
        for conv in (int, float):
            try:
                return conv(v)
            except ValueError:
                pass
        return v
    if isinstance(v, (int, float)):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return float(v)         # Decimal


def same_answer(csv_text: str, duck_rows) -> str | None:
    """None if toaster's `--output csv` of one query equals DuckDB's rows (numbers to the
    oracle's tolerance), else what differs."""
    from toaster.testing import values_equal
    lines = [ln for ln in csv_text.strip().splitlines() if ln]
    ours = sorted((tuple(_cell(c) for c in ln.split(",")) for ln in lines[1:]), key=repr)
    theirs = sorted((tuple(_cell(c) for c in row) for row in duck_rows), key=repr)
    if len(ours) != len(theirs):
        return f"{len(ours)} rows, DuckDB {len(theirs)}"
    for a, b in zip(ours, theirs):
        if len(a) != len(b) or not all(values_equal(x, y) for x, y in zip(a, b)):
            return f"row {a} differs from DuckDB's {b}"
    return None


def _toaster_run(path: str, *flags, repeats: int = 1, pycache: str | None = None,
                 jit_cache: str = "off") -> tuple[float, str | None, str, float]:
    """(median wall seconds, error or None, stdout, median CPU seconds) of `python -m
    toaster.pipeline path --run` in a fresh process, after one untimed run when repeats > 1
    (which fills jit_cache, a directory or 'off')."""
    env = dict(os.environ)
    env["TOASTER_JIT_CACHE"] = jit_cache
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    cmd = [sys.executable, "-m", "toaster.pipeline", path, "--backend", "llvm", "--run", "--output", "csv", *flags]
    walls, cpus = [], []
    warm = 1 if repeats > 1 or jit_cache != "off" else 0      # a warm cache needs a run before
    for i in range(repeats + warm):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if run.returncode != 0:
            return seconds, (run.stderr.strip().splitlines() or ["failed"])[-1][:120], "", 0.0
        if i >= warm:               # the first run warms the caches
            walls.append(seconds)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), None, run.stdout, statistics.median(cpus)


def run_end_to_end(args, cfg) -> int:
    from bench.harness import find_query
    from bench.tpch import generate_tables
    from toaster.pipeline import compile_sql
    scale = args.scale if args.scale is not None else 0.1
    queries = args.queries or E2E_QUERIES
    base = os.path.abspath(cfg.data_dir or os.path.join(cfg.out, "data"))
    tbl_dir = generate_tables(os.path.join(base, f"tbl-sf{scale:g}"), scale)
    csv_dir = os.path.join(base, f"e2e-csv-sf{scale:g}")
    schema = write_csv_tables(tbl_dir, csv_dir)
    rows = []
    for name in queries:
        q = find_query(name)
        if q.dataset != "tpch":
            continue
        text = schema + "\n" + q.text
        path = os.path.join(cfg.out, f"e2e-{q.name}.sql")
        with open(path, "w") as f:
            f.write(text)
        comp = compile_sql(text)
        used = sorted(r.name for r in comp.m3.relations
                      if any(t.event.relation == r.name for t in comp.m3.triggers) or r.kind == "table")
        repeats = max(1, getattr(args, "repeats", 1) or 1)
        pycache = os.path.abspath(os.path.join(cfg.out, "pycache"))
        default_s, error, out, default_cpu = _toaster_run(path, repeats=repeats, pycache=pycache)
        cached_s, error_cached, out_cached, cached_cpu = _toaster_run(
            path, repeats=repeats, pycache=pycache, jit_cache=os.path.abspath(os.path.join(cfg.out, "jit-cache")))
        light_s, error_light, out_light, light_cpu = _toaster_run(path, "--opt-level", "2", repeats=repeats,
                                                                  pycache=pycache)
        if error or error_light or error_cached:
            rows.append((q.name, None, None, None, None, error or error_cached or error_light, None, None, None,
                         None))
            continue
        if repeats > 1:
            duckdb_once(csv_dir, comp.oracle_sql, used)         # untimed: the files in the OS cache
        timed = [duckdb_once(csv_dir, comp.oracle_sql, used) for _ in range(repeats)]
        duck_s, answers = statistics.median(t[0] for t in timed), timed[-1][1]
        duck_cpu = statistics.median(t[2] for t in timed)
        note = ""
        if len(answers) == 1:
            wrong = same_answer(out, answers[0]) or same_answer(out_cached, answers[0]) or \
                same_answer(out_light, answers[0])
            note = f"WRONG: {wrong}" if wrong else "= DuckDB"
        rows.append((q.name, default_s, cached_s, light_s, duck_s, note, default_cpu, cached_cpu, light_cpu,
                     duck_cpu))
    lines = [f"End to end, TPC-H SF {scale:g} CSV (insert-only), wall seconds including compile and reading "
             f"the files (median of {max(1, getattr(args, 'repeats', 1) or 1)}, after a warm-up run if more than one; CPU "
             "seconds, all threads, in parentheses, and the ratio of CPU seconds beside the ratio of wall seconds: the "
             "steadier one on a shared machine); DuckDB single-threaded; load average "
             f"{os.getloadavg()[0]:.1f} at the end.", "",
             "| query | toaster llvm --run, cold JIT (s) | ratio | JIT cache warm (s) | ratio "
             "| cold, --opt-level 2 (s) | ratio | DuckDB once (s) | answer |",
             "|---|---|---|---|---|---|---|---|---|"]

    def fmt(x, cpu=None):
        return "-" if x is None else f"{x:.2f}" + ("" if cpu is None else f" ({cpu:.2f} CPU)")

    def ratio(x, d):
        return f"{x / d:.1f}x" if x and d else "-"

    def ratios(x, xc, d, dc):
        return f"{ratio(x, d)} ({ratio(xc, dc)} CPU)"

    for name, ts, cs, ls, ds, note, tc, cc, lc, dc in rows:
        lines.append(f"| {name} | {fmt(ts, tc)} | {ratios(ts, tc, ds, dc)} | {fmt(cs, cc)} | {ratios(cs, cc, ds, dc)} | "
                     f"{fmt(ls, lc)} | {ratios(ls, lc, ds, dc)} | {fmt(ds, dc)} | {note} |")
    report = "\n".join(lines) + "\n"
    with open(os.path.join(cfg.out, "end-to-end.md"), "w") as f:
        f.write(report)
    print(report)
    return 0 if all(r[1] is not None and not r[5].startswith("WRONG") for r in rows) else 1


def breakdown(path: str, opt_level: int | None = None, atomic: bool = False) -> dict:
    """CPU seconds of each step of one `--run` of the query file `path`, run one after the other
    in this process (no overlap, no JIT cache): Python passes up to the imperative IR,
    imp_to_llvm, LLVM's IR passes and machine code generation (jit.compile_module's steps), reading
    every source whole (Arrow, all its threads) and maintaining the views. In a fresh process (as
    `python -m bench.end_to_end Q.sql`) each step pays the imports it triggers, as in `--run`:
    the passes the pass modules' and lark's grammar, imp_to_llvm llvmlite's, reading Arrow's.
    opt_level: LLVM's (default: the one `--run` picks for this input); atomic: the engine's
    (default False, as `--run` builds it: no undo records for checked integers)."""
    import llvmlite.binding as llvm
    from toaster.backends.llvm import engine as llvm_engine
    from toaster.backends.llvm.codegen import generate_llvm
    from toaster.pipeline import compile_file
    from toaster.runtime.csv_source import open_sources
    from toaster.runtime.reads import ProgramReads
    from toaster.backends.llvm.jit import run_opt_level
    cpu = time.process_time
    out = {}
    t = cpu()
    imp = compile_file(path).stage("imp")
    out["passes"] = cpu() - t
    t = cpu()
    module = generate_llvm(imp)
    out["imp_to_llvm"] = cpu() - t
    if opt_level is None:
        opt_level = run_opt_level(ProgramReads(module.program), None)
    real_pm = llvm.create_pass_builder

    class _TimedRun:                       # times the module pass manager's run (the IR passes)
        def __init__(self, mpm):
            self._mpm = mpm

        def run(self, mod, pb):
            t0 = cpu()
            self._mpm.run(mod, pb)
            out["llvm_ir_passes"] = cpu() - t0

        def __getattr__(self, name):
            return getattr(self._mpm, name)

    def timed_pass_builder(*a, **kw):
        pb = real_pm(*a, **kw)
        get = pb.getModulePassManager
        pb_wrapped = type("PB", (), {"getModulePassManager": lambda self: _TimedRun(get()),
                                     "__getattr__": lambda self, n: getattr(pb, n)})()
        return pb_wrapped
    llvm.create_pass_builder = timed_pass_builder
    new_mpm = llvm.create_new_module_pass_manager
    llvm.create_new_module_pass_manager = lambda: _TimedRun(new_mpm())
    try:
        out["llvm_ir_passes"] = 0.0
        t = cpu()
        engine = llvm_engine.LLVMEngine(module, opt_level=opt_level, atomic=atomic)
        out["jit_other"] = cpu() - t - out["llvm_ir_passes"]      # parse, verify, machine code, set-up
    finally:
        llvm.create_pass_builder = real_pm
        llvm.create_new_module_pass_manager = new_mpm
    t = cpu()
    tables, streams = open_sources(list(engine.relations.values()), relations_used=engine.relations_needed(),
                                   columns=engine.columns_needed)
    batches = list(tables) + list(streams)
    out["read"] = cpu() - t
    t = cpu()
    for b in batches:
        engine.apply(b)
    out["maintain"] = cpu() - t
    engine.close()
    return out


if __name__ == "__main__":      # python bench/end_to_end.py Q.sql [OPT_LEVEL [atomic]]: one breakdown line
    import toaster.cli, toaster.pipeline  # noqa: F401,E401 -- what `python -m toaster.pipeline` imports first
    _imports = time.process_time()          # this process so far: start-up and those imports
    _parts = breakdown(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None,
                       atomic=len(sys.argv) > 3 and sys.argv[3] == "atomic")
    print(f"imports {_imports:.3f} " + " ".join(f"{k} {v:.3f}" for k, v in _parts.items())
          + f" total {_imports + sum(_parts.values()):.3f} (CPU s)")
