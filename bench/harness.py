"""The benchmark harness: queries x backends x strategies x batch sizes over generated streams.

    cfg = BenchConfig(queries=["tpch_q6"], backends=["interp", "llvm"], batch_sizes=[1, 100])
    results = run_benchmark(cfg)           # -> [RunResult]; bench.report writes CSV/Markdown/PNG

For every query the stream of its dataset is parsed once (timed apart: `parse_seconds`) and cut
into batches per batch size before any engine sees it. Each run then compiles the query
(compile time, which includes LLVM JIT or Spark session start-up), loads the static tables
(untimed), feeds the batches and times only `engine.apply` (maintenance time), stopping at the
time limit; rate = events fed / maintenance time (with batch size 1: view refreshes per second).
Peak memory is the growth of the process's resident set during the run (Linux VmHWM after a
reset through /proc/self/clear_refs; Spark's JVM is not counted).

The baseline is DuckDB holding the same database and re-running the query after every batch of
the same stream. Its rate is measured in `duckdb_windows` windows spread evenly over the stream
(between windows it applies the updates without re-running the query), so it is not flattered
by the small database at the start of the stream. ratio = rate / DuckDB's rate at that batch size.

At the end of each run, toaster's views are compared with DuckDB evaluating the query on the
database the run has reached (toaster.testing.Oracle, compare_results); a mismatch makes the
run WRONG and it has no rate.
"""
from __future__ import annotations

import os
import re
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field, asdict
from typing import Callable


from toaster.errors import ToasterError, UnsupportedError
from toaster.runtime.batch import Batch
from bench.limits import RunTimeout, deadline, hard_limit, peak_memory_mb, reset_peak_memory  # noqa: F401 (re-exported)
from bench.sparksql import job_count_since, last_job_id

QUERY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queries")
DEFAULT_STRATEGY = "hoivm"
# the calc backend re-evaluates the calculus after each batch: one strategy of its own
REEVAL_BACKENDS = {"calc": "reeval"}
_DATASET_RE = re.compile(r"^--\s*dataset:\s*(\w+)", re.MULTILINE)
# `-- query: tests/queries/tpch/q17.sql` reuses a suite query (its INCLUDE lines dropped)
_QUERY_RE = re.compile(r"^--\s*query:\s*(\S+)", re.MULTILINE)


@dataclass
class BenchConfig:
    queries: list = field(default_factory=lambda: ["tpch_q6", "tpch_q3"])
    backends: list = field(default_factory=lambda: ["interp", "llvm"])
    strategies: list = field(default_factory=lambda: [DEFAULT_STRATEGY])
    batch_sizes: list = field(default_factory=lambda: [1, 100, 1000])
    scale: float = 0.01
    seed: int = 1
    active_orders: int | None = None
    active_lineitems: int | None = None
    finance_events: int = 50_000
    brokers: int = 10
    time_limit: float = 10.0           # seconds of feeding per run
    max_events: int | None = None      # prefix of each query's stream
    mode: str = "auto"                 # auto: tuple for batch size 1, batch otherwise
    reeval_max_relations: int | None = None  # run re-evaluating backends (calc) only on queries over
                                             # at most this many relations (its joins are nested loops)
    duckdb: bool = True
    sparksql: bool = False             # the Spark SQL re-evaluation baseline (bench/sparksql.py)
    duckdb_windows: int = 5
    duckdb_threads: int = 1
    out: str = "bench-results"
    data_dir: str | None = None        # default OUT/data
    progress: bool = True
    master: str | None = None          # Spark master


@dataclass
class RunResult:
    dataset: str
    query: str
    backend: str
    strategy: str
    mode: str
    batch_size: int
    status: str = "OK"                 # OK | WRONG | ERROR | UNSUPPORTED | TIMEOUT | SKIPPED
    events: int = 0                    # events fed (and timed)
    stream_events: int = 0             # events in this query's stream
    compile_s: float | None = None
    maint_s: float | None = None
    native_s: float | None = None      # of maint_cpu_s, CPU time inside the native trigger code (llvm only)
    maint_cpu_s: float | None = None   # maint_s as this thread's CPU time (what python_share divides;
                                       # wall time at batch size 1, see _feed), clock_s taken out
    clock_s: float | None = None       # CPU time of the clock reads timing the batches (bench's and the
                                       # native entry's), measured and left out of maint_cpu_s / native_s
    rate: float | None = None          # events per second of maintenance (None unless OK)
    peak_mb: float | None = None
    duckdb_rate: float | None = None
    ratio: float | None = None
    sparksql_rate: float | None = None
    sparksql_ratio: float | None = None   # rate / Spark SQL re-evaluation's rate
    spark_jobs: float | None = None       # Spark jobs per timed batch (spark backend, sparksql baseline)
    spark_stages: float | None = None     # Spark stages run per timed batch
    note: str = ""

    @property
    def fraction(self) -> float:
        return self.events / self.stream_events if self.stream_events else 1.0

    @property
    def python_share(self) -> float | None:
        """Share of maintenance time spent in Python (apply time minus native time), both as
        the feeding thread's CPU time: a loaded machine's waits count on neither side."""
        if self.native_s is None or not self.maint_cpu_s:
            return None
        return max(0.0, self.maint_cpu_s - self.native_s) / self.maint_cpu_s

    def row(self) -> dict:
        d = asdict(self)
        d["fraction"] = round(self.fraction, 4)
        share = self.python_share
        d["python_share"] = None if share is None else round(share, 4)
        return d


# ------------------------------------------------------------------------------ queries
@dataclass(frozen=True)
class BenchQuery:
    name: str
    dataset: str      # 'tpch' | 'finance'
    text: str         # SELECTs only; the dataset's schema is prepended
    path: str


def find_query(name: str) -> BenchQuery:
    """A query by name (bench/queries/NAME.sql) or by path to a .sql file with a dataset header."""
    path = name if name.endswith(".sql") and os.path.exists(name) else os.path.join(QUERY_DIR, name + ".sql")
    if not os.path.exists(path):
        raise ToasterError(f"unknown bench query {name!r} (available: {', '.join(available_queries())})")
    with open(path) as f:
        text = f.read()
    m = _DATASET_RE.search(text)
    if m is None:
        raise ToasterError(f"{path}: a bench query needs a '-- dataset: tpch|finance' header line")
    ref = _QUERY_RE.search(text)
    if ref is not None:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with open(os.path.join(repo, ref.group(1))) as f:
            text += "".join(line for line in f if not line.lstrip().upper().startswith("INCLUDE"))
    return BenchQuery(os.path.splitext(os.path.basename(path))[0], m.group(1).lower(), text, path)


def available_queries() -> list[str]:
    return sorted(os.path.splitext(f)[0] for f in os.listdir(QUERY_DIR) if f.endswith(".sql"))


def dataset_stream(dataset: str, cfg: BenchConfig):
    """Generate (or reuse) the stream files of a dataset; returns bench.tpch.StreamInfo."""
    data_dir = cfg.data_dir or os.path.join(cfg.out, "data")
    if dataset == "tpch":
        from bench.tpch import generate_tpch_stream, default_active_sizes
        ao, al = default_active_sizes(cfg.scale)
        ao = cfg.active_orders or ao
        al = cfg.active_lineitems or al
        d = os.path.join(data_dir, f"tpch-sf{cfg.scale:g}-seed{cfg.seed}-o{ao}-l{al}")
        return generate_tpch_stream(d, cfg.scale, cfg.seed, ao, al,
                                    tbl_dir=os.path.join(data_dir, f"tbl-sf{cfg.scale:g}"))
    if dataset == "finance":
        from bench.finance import generate_finance_stream
        d = os.path.join(data_dir, f"finance-n{cfg.finance_events}-seed{cfg.seed}-b{cfg.brokers}")
        return generate_finance_stream(d, cfg.finance_events, cfg.seed, cfg.brokers)
    raise ToasterError(f"unknown dataset {dataset!r} (tpch, finance)")


# bench strategies that are HO-IVM with a pass skipped (to measure what the pass buys)
SKIPPED_PASSES = {"nocache": ("m3_range_index", "m3_view_cache"), "noindex": ("m3_range_index",),
                  "nofactor": ("m3_factorize",)}


def compile_query(text: str, mode: str, strategy: str, master: str | None = None):
    """Compile with a maintenance strategy. Only HO-IVM exists today; a later compile option
    `strategy=` (ivm / rep / naive) is passed through when the pipeline accepts it."""
    from toaster.pipeline import compile_sql
    kw = {"master": master} if master else {}
    if strategy in (DEFAULT_STRATEGY, "reeval"):
        return compile_sql(text, mode=mode, **kw)
    if strategy in SKIPPED_PASSES:      # HO-IVM without one optimization pass
        return compile_sql(text, mode=mode, skip=SKIPPED_PASSES[strategy], **kw)
    try:
        return compile_sql(text, mode=mode, strategy=strategy, **kw)
    except TypeError:
        raise UnsupportedError(f"strategy {strategy!r} (this toaster has only the default {DEFAULT_STRATEGY!r})") from None


def mode_for(backend: str, batch_size: int, mode: str) -> str:
    if backend == "spark":
        return "batch"
    if mode != "auto":
        return mode
    return "tuple" if batch_size == 1 else "batch"


# ------------------------------------------------------------------------------ checking
class ExpectedResults:
    """DuckDB's answer for the database after the first n events of a query's stream (cached)."""

    def __init__(self, es, relations, stream_rels, oracle_sql):
        self.es, self.relations, self.stream_rels, self.oracle_sql = es, relations, stream_rels, oracle_sql
        self._cache: dict[int, list] = {}

    def __call__(self, n_events: int) -> list:
        if n_events not in self._cache:
            from toaster.testing import Oracle
            oracle = Oracle(self.relations)
            try:
                for b in self.es.tables:
                    oracle.apply(b)
                for b in self.es.prefix_batches(n_events, self.stream_rels):
                    oracle.apply(b)
                self._cache[n_events] = [oracle.query(sql) for sql in self.oracle_sql]
            finally:
                oracle.close()
        return self._cache[n_events]


def check_results(engine_results, expected, queries) -> str | None:
    """None if every result equals DuckDB's, else a one-line description of the first difference."""
    from toaster.testing import compare_results
    got = {r.name: r for r in engine_results}
    for q, rows in zip(queries, expected):
        r = got.get(q.name)
        if r is None:
            return f"no result {q.name}"
        diffs = compare_results(r, rows, len(q.key_columns))
        if diffs:
            return f"{q.name}: {len(diffs)} differing key(s), e.g. {diffs[0]}"
    return None


# ------------------------------------------------------------------------------ runs
def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="ev", leave=False, file=sys.stderr, mininterval=0.5,
                dynamic_ncols=True)


def run_engine(text: str, backend: str, strategy: str, mode: str, batches: list, tables: list,
               expected: Callable, base: RunResult, time_limit: float, progress: bool = False,
               master: str | None = None, engine_factory: Callable | None = None) -> RunResult:
    """One toaster run: compile, load tables, feed batches (timed), compare with DuckDB.

    Backends that re-evaluate (calc) read every result after each batch, inside the timed
    region: their views are only computed when read, and a refresh is what is measured."""
    res = RunResult(**{**asdict(base), "backend": backend, "strategy": strategy, "mode": mode})
    held: dict = {}                  # the engine, once built (closed whatever happens)
    try:
        with deadline(hard_limit(time_limit)):
            final, queries = _feed(res, held, text, backend, strategy, mode, batches, tables, time_limit,
                                   progress, master, engine_factory)
    except UnsupportedError as e:
        res.status, res.note = "UNSUPPORTED", str(e).splitlines()[0][:200]
    except RunTimeout as e:
        res.status, res.note = "TIMEOUT", f"{e} after {res.events:,} events"
    except Exception as e:   # a crashing engine is a result of the benchmark, not its end
        res.status = "ERROR"
        res.note = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        if os.environ.get("BENCH_TRACEBACK"):
            traceback.print_exc()
    else:
        problem = check_results(final, expected(res.events), queries)
        if problem is not None:
            res.status, res.note = "WRONG", problem
        else:
            res.rate = res.events / res.maint_s if res.maint_s else None
            if res.events < res.stream_events:
                res.note = f"time limit: {res.events:,}/{res.stream_events:,} events"
    finally:
        if held.get("bar") is not None:
            held["bar"].close()
        if held.get("engine") is not None:
            try:
                held["engine"].close()
            except Exception:
                pass
    return res


def _feed(res: RunResult, held: dict, text, backend, strategy, mode, batches, tables, time_limit, progress,
          master, engine_factory):
    """Compile, load tables, feed batches; fills res (compile_s, events, maint_s, peak_mb) and
    returns (final results, query shapes)."""
    refresh = backend in REEVAL_BACKENDS
    mem0 = reset_peak_memory()
    t0 = time.perf_counter()
    if engine_factory is not None:
        comp, engine = engine_factory(text, mode, strategy)
    else:
        comp = compile_query(text, mode, strategy, master)
        engine = comp.engine(backend)
    held["engine"] = engine
    res.compile_s = time.perf_counter() - t0
    # CPU clocks (a syscall each) cost ~1 us per read: over one-event batches they would be a
    # large part of what is measured, so tuple mode keeps the cheap monotonic clock on both sides
    cpu_clocks = res.batch_size != 1
    native = _time_native_calls(engine, cpu_clocks)
    cpu_clock = time.thread_time if cpu_clocks else time.perf_counter
    region = _timed_region_cost(cpu_clock)
    native_clocks = getattr(engine, "native_clock_seconds", None) if native is not None else None
    queries = list(comp.queries)
    for b in tables:
        engine.apply(b)
    native0 = native() if native is not None else 0.0     # table loads are untimed
    clocks0 = native_clocks() if native_clocks is not None else (0.0, 0.0)
    bar = held["bar"] = _progress(res.stream_events, f"{res.query} {backend}/{strategy} bs={res.batch_size}",
                                  progress)
    res.maint_s = res.maint_cpu_s = 0.0
    sc = _spark_context(engine)
    apply_many = getattr(engine, "apply_many", None)    # toaster engines; a test's wrapper may lack it
    jobs = stages = timed_batches = timed = 0
    start = time.perf_counter()
    for group in batches:                  # one batch of the stream: a Batch per relation
        job0 = None if sc is None else last_job_id(sc)
        c = cpu_clock()                    # as _timed_region_cost, which measures this with nothing in it
        t = time.perf_counter()            # the wall time inside: a CPU clock read is a syscall
        if apply_many is not None:
            apply_many(group)              # spark: the relations of one batch in one job
        else:
            for b in group:
                engine.apply(b)
        if refresh:
            engine.results()
        t = time.perf_counter() - t
        res.maint_cpu_s += cpu_clock() - c
        res.maint_s += t
        timed += 1
        if sc is not None:                 # counted outside the timed region
            j, st, _ = job_count_since(sc, job0)
            jobs, stages, timed_batches = jobs + j, stages + st, timed_batches + 1
        n = sum(len(b) for b in group)
        res.events += n
        if bar is not None:
            bar.update(n)
        if time.perf_counter() - start > time_limit:
            break
    # spark: the views live in Spark's JVM and Python workers, which the driver's probe does not
    # see (it read "0.0MB"): no number rather than a false one
    res.peak_mb = peak_memory_mb(mem0) if sc is None else None
    # the clocks' own cost is measurement, not maintenance: out of both sides of python_share
    inside, total = (a - b for a, b in zip(native_clocks(), clocks0)) if native_clocks is not None else (0.0, 0.0)
    res.clock_s = min(res.maint_cpu_s, timed * region + total)
    res.maint_cpu_s -= res.clock_s
    if native is not None:
        res.native_s = max(0.0, native() - native0 - inside)
    if timed_batches:
        res.spark_jobs, res.spark_stages = jobs / timed_batches, stages / timed_batches
    return engine.results(), queries


def _spark_context(engine):
    """The SparkContext of a toaster spark engine (None for the other engines)."""
    sc = getattr(getattr(engine, "program", None), "sc", None)
    return sc if sc is not None and hasattr(sc, "statusTracker") else None


def _timed_region_cost(cpu_clock, samples: int = 301) -> float:
    """CPU seconds (by cpu_clock) that _feed's timed region costs with nothing in it: its own
    clock reads (~0.8 us for a CPU clock's two syscalls on this machine, a few % of a 1,000-row
    batch). Median of `samples`."""
    costs = []
    for _ in range(samples):
        c = cpu_clock()
        t = time.perf_counter()
        t = time.perf_counter() - t
        costs.append(cpu_clock() - c)
    return statistics.median(costs)


def _time_native_calls(engine, cpu_clock: bool = True) -> Callable | None:
    """For an llvm engine, a function giving the seconds spent in its native trigger code so far
    (the engine's native entry times itself with the thread's CPU clock, as _feed times apply:
    no Python wrapper whose own cost would count on either side, and time the machine's other
    work takes counts on neither; with cpu_clock=False the monotonic clock, as perf_counter);
    None for other engines."""
    start = getattr(engine, "time_native", None)
    if start is None:
        return None
    start(time.CLOCK_THREAD_CPUTIME_ID if cpu_clock else time.CLOCK_MONOTONIC)
    return engine.native_seconds


def concat_batches(groups: list) -> list[Batch]:
    """Groups of batches merged into one Batch per relation (each relation's rows in order)."""
    by_rel: dict[str, list[Batch]] = {}
    for group in groups:
        for b in group:
            by_rel.setdefault(b.relation, []).append(b)
    out = []
    for rel, bs in by_rel.items():
        out.append(Batch.concat(bs))
    return out


def replay_windows(db, sqls, batches: list, windows: int, time_limit: float, bar,
                   around=None) -> tuple[int, float, int, int]:
    """Re-evaluation baselines: feed `batches` (groups of Batches) to `db` (apply/run), timing
    ingest + every query after each batch in `windows` evenly spread windows of
    time_limit / windows seconds each; between windows batches are ingested untimed.
    `around(group, timed_call)` may wrap each timed batch (e.g. to count Spark jobs).
    Returns (events timed, seconds timed, events ingested, windows used)."""
    n = len(batches)
    windows = max(1, min(windows, n)) if n else 1
    starts = [k * n // windows for k in range(windows)] + [n]
    budget = time_limit / windows
    timed, events, applied, pos = 0.0, 0, 0, 0

    def step(group) -> float:
        t = time.perf_counter()
        for b in group:
            db.apply(b)
        for sql in sqls:
            db.run(sql)
        return time.perf_counter() - t
    try:
        for w in range(windows):
            if pos < starts[w]:           # fast-forward: ingest without re-evaluating
                for b in concat_batches(batches[pos:starts[w]]):
                    db.apply(b)
                k = sum(len(b) for g in batches[pos:starts[w]] for b in g)
                applied += k
                if bar is not None:
                    bar.update(k)
                pos = starts[w]
            spent = 0.0
            while pos < starts[w + 1] and spent < budget:
                group = batches[pos]
                spent += around(group, step) if around is not None else step(group)
                k = sum(len(b) for b in group)
                events += k
                applied += k
                pos += 1
                if bar is not None:
                    bar.update(k)
            timed += spent
    finally:
        if bar is not None:
            bar.close()
    return events, timed, applied, windows


def run_duckdb(relations, oracle_sql, batches: list, tables: list, base: RunResult, time_limit: float,
               windows: int = 5, threads: int = 1, progress: bool = False) -> RunResult:
    """The baseline: DuckDB re-running the query after every batch, timed in evenly spread windows."""
    from bench.baseline import DuckReplayer
    res = RunResult(**{**asdict(base), "backend": "duckdb", "strategy": "reeval", "mode": "batch"})
    db = None
    try:
        mem0 = reset_peak_memory()
        db = DuckReplayer(relations, threads=threads)
        for b in tables:
            db.apply(b)
        bar = _progress(res.stream_events, f"{res.query} duckdb bs={res.batch_size}", progress)
        events, timed, _, windows = replay_windows(db, oracle_sql, batches, windows, time_limit, bar)
        res.peak_mb = peak_memory_mb(mem0)
        res.events, res.maint_s = events, timed
        res.rate = events / timed if timed > 0 else None
        if events < res.stream_events:
            res.note = f"sampled: {events}/{res.stream_events} events in {windows} windows"
    except Exception as e:
        res.status, res.note = "ERROR", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    finally:
        if db is not None:
            db.close()
    return res


def stream_relations(text: str) -> tuple[set, object]:
    """The relations whose updates can change the query's views (those with triggers), and the
    tuple-mode compilation (for its queries and oracle SQL)."""
    comp = compile_query(text, "tuple", DEFAULT_STRATEGY)
    return {t.event.relation for t in comp.m3.triggers}, comp


def run_benchmark(cfg: BenchConfig, log: Callable = print) -> tuple[list[RunResult], dict]:
    """Every configured run; returns (results, info) where info holds parse timings per dataset."""
    from bench.stream import load_event_stream
    queries = [find_query(q) for q in cfg.queries]
    results: list[RunResult] = []
    info: dict = {"datasets": {}}
    streams: dict = {}
    for q in queries:
        if q.dataset not in streams:
            t0 = time.perf_counter()
            si = dataset_stream(q.dataset, cfg)
            gen_s = time.perf_counter() - t0
            es = load_event_stream(si.schema_sql())
            streams[q.dataset] = (si, es)
            info["datasets"][q.dataset] = {"directory": si.directory, "events": len(es), "params": si.params,
                                           "generate_s": gen_s, "parse_s": es.parse_seconds,
                                           "parse_rate": len(es) / es.parse_seconds if es.parse_seconds else None}
            log(f"[bench] {q.dataset}: {len(es):,} events in {si.directory} "
                f"(generate/reuse {gen_s:.1f}s, parse {es.parse_seconds:.2f}s = "
                f"{len(es) / max(es.parse_seconds, 1e-9):,.0f} events/s)")
        si, es = streams[q.dataset]
        text = si.schema_sql() + "\n" + q.text
        try:
            rels, comp0 = stream_relations(text)
        except ToasterError as e:
            log(f"[bench] {q.name}: does not compile: {str(e).splitlines()[0]}")
            for be in cfg.backends:
                results.append(RunResult(q.dataset, q.name, be, DEFAULT_STRATEGY, "-", 0, "UNSUPPORTED",
                                         note=str(e).splitlines()[0][:200]))
            continue
        relations = list(comp0.m3.relations)
        stream_rels = rels & set(es.stream_names)
        total = es.count(stream_rels)
        if cfg.max_events is not None:
            total = min(total, cfg.max_events)
        expected = ExpectedResults(es, relations, stream_rels, tuple(comp0.oracle_sql))
        tables = [b for b in es.tables if b.relation in {r.name for r in relations}]
        log(f"[bench] {q.name}: {total:,} events of {', '.join(sorted(stream_rels))}")
        for bs in cfg.batch_sizes:
            t0 = time.perf_counter()
            batches = es.batches(bs, stream_rels, total)
            info.setdefault("batching_s", {})[f"{q.name}/{bs}"] = time.perf_counter() - t0
            base = RunResult(q.dataset, q.name, "", "", "", bs, stream_events=total)
            runs = []
            for be in cfg.backends:
                strategies = [REEVAL_BACKENDS[be]] if be in REEVAL_BACKENDS else cfg.strategies
                if be in REEVAL_BACKENDS and cfg.reeval_max_relations is not None \
                        and len(rels) > cfg.reeval_max_relations:
                    runs.append(RunResult(**{**asdict(base), "backend": be, "strategy": strategies[0],
                                             "mode": "-", "status": "SKIPPED",
                                             "note": f"re-evaluation only for queries over <= "
                                                     f"{cfg.reeval_max_relations} relation(s) in this preset"}))
                    continue
                for st in strategies:
                    r = run_engine(text, be, st, mode_for(be, bs, cfg.mode), batches, tables, expected, base,
                                   cfg.time_limit, cfg.progress, cfg.master)
                    runs.append(r)
                    log("[bench] " + describe(r))
            baselines = []
            if cfg.duckdb:
                d = run_duckdb(relations, tuple(comp0.oracle_sql), batches, tables, base, cfg.time_limit,
                               cfg.duckdb_windows, cfg.duckdb_threads, cfg.progress)
                log("[bench] " + describe(d))
                baselines.append(d)
            if cfg.sparksql:
                from bench.sparksql import run_sparksql
                s = run_sparksql(relations, tuple(comp0.oracle_sql), list(comp0.queries), batches, tables,
                                 expected, base, cfg.time_limit, cfg.duckdb_windows, cfg.master, cfg.progress)
                log("[bench] " + describe(s))
                baselines.append(s)
            runs += baselines
            for b in baselines:
                rate_field, ratio_field = ("duckdb_rate", "ratio") if b.backend == "duckdb" else \
                    ("sparksql_rate", "sparksql_ratio")
                for r in runs:
                    setattr(r, rate_field, b.rate)
                    if r.rate is not None and b.rate:
                        setattr(r, ratio_field, r.rate / b.rate)
            results.extend(runs)
    return results, info


def describe(r: RunResult) -> str:
    head = f"{r.query:12s} {r.backend:6s} {r.strategy:7s} {r.mode:5s} bs={r.batch_size:<6d}"
    if r.status != "OK":
        return f"{head} {r.status}: {r.note}"
    rate = f"{r.rate:,.0f} ev/s" if r.rate else "-"
    comp = f" compile {r.compile_s:.2f}s" if r.compile_s is not None else ""
    # growth of the process's resident set over the run: memory an earlier run freed but the
    # allocator kept is reused without growth, so a later run can read +0.0 MB
    mem = f" rss +{r.peak_mb:.1f}MB" if r.peak_mb is not None else \
        " rss n/a" if r.backend in ("spark", "sparksql") else ""
    py = f" python {100 * r.python_share:.0f}%" if r.python_share is not None else ""
    # by the feeding thread's CPU time (batch size > 1, see _feed): the steadier rate on a loaded machine
    cpu = f" cpu {r.events / r.maint_cpu_s:,.0f} ev/s" if r.batch_size != 1 and r.maint_cpu_s else ""
    return f"{head} {rate}{cpu} ({r.events:,}/{r.stream_events:,} ev){comp}{mem}{py}"
