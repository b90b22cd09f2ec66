"""The command line: `python -m toaster.pipeline QUERY [options]` (also installed as `toaster`).

Exit codes: 0 success; 2 an error the user can fix (bad SQL, input, flags, pass names, a construct
not supported yet), printed as one line; 3 an internal error, one line naming the pass that
failed (`--traceback` prints the Python traceback too); 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import traceback

from toaster.errors import InternalError, ToasterError, UsageError

SPARK_LOG = "spark-log"     # in --checkpoint-dir: the spark engine's own delta log (docs/checkpoints.md)


class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, exit 2 (argparse prints the usage too)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m toaster.pipeline",
                 description="Compile SQL views (or .m3/.k3/.imp programs) into incremental trigger "
                             "programs and run them.")
    ap.add_argument("query", nargs="?", help="query file: .sql, or a program of a later stage (.m3, .k3, .imp)")
    ap.add_argument("--run", action="store_true", help="read the sources, feed the streams, print the views")
    ap.add_argument("--backend", default="interp",
                    help="engine to run: interp (default), calc, imp, llvm, spark (see --list-passes)")
    ap.add_argument("--mode", choices=["tuple", "batch"], default=None,
                    help="single-tuple or batch triggers (default: tuple; batch for spark)")
    ap.add_argument("--strategy", choices=["hoivm", "ivm", "rep", "naive"], default="hoivm",
                    help="maintenance strategy (sets calc_to_m3.strategy)")
    ap.add_argument("--depth", type=int, default=None, help="highest delta order given its own maps "
                    "(sets calc_to_m3.depth)")
    ap.add_argument("--explain", action="store_true",
                    help="summarize maps, triggers and the compiler's decisions")
    ap.add_argument("--dot", metavar="FILE", help="write the view dependency graph: Graphviz DOT, or a "
                    "picture when FILE ends in .png, .svg or .pdf (drawn with matplotlib)")
    ap.add_argument("--output", choices=["table", "csv", "json"], default="table")
    ap.add_argument("--emit", choices=["snapshot", "changes"], default="snapshot",
                    help="with --run: print the views at the end (snapshot, default) or, after every "
                         "batch, the rows each view lost and gained (changes)")
    ap.add_argument("--dump-ir", metavar="[BRANCH:]STAGE[,...]|all",
                    help="print the IR of these stages (the output of the last pass giving each)")
    ap.add_argument("--dump-dir", metavar="DIR", help="write one numbered file per pass as it runs")
    ap.add_argument("--print-before", action="append", default=[], metavar="PASS",
                    help="print the IR a pass reads, before it runs (repeatable; 'all')")
    ap.add_argument("--print-after", action="append", default=[], metavar="PASS",
                    help="print the IR a pass gives, after it runs (repeatable; 'all')")
    ap.add_argument("--time-passes", action="store_true",
                    help="print every pass that ran with its time and whether it changed the program")
    ap.add_argument("--list-passes", action="store_true",
                    help="list the registered passes, their options, the pipelines and the backends")
    ap.add_argument("--skip-pass", action="append", default=[], metavar="NAME",
                    help="leave an optional pass out of every pipeline")
    ap.add_argument("--add-pass", action="append", default=[], metavar="MODULE:SPEC[@AFTER]",
                    help="import MODULE (which registers the pass) and insert SPEC after pass AFTER")
    ap.add_argument("--pass-option", action="append", default=[], metavar="PASS.KEY=VALUE",
                    help="set an option of a pass, e.g. k3_fuse.rules=beta,fold_of_map")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="stream rows per batch for --run (default: a whole file per batch)")
    ap.add_argument("--checkpoint-dir", metavar="DIR", default=None,
                    help="with --run: write checkpoints of the engine's state and input position "
                         "into DIR (docs/checkpoints.md); one after the last batch at least")
    ap.add_argument("--checkpoint-every", metavar="N", type=int, default=None,
                    help="with --checkpoint-dir: a checkpoint after every N batches")
    ap.add_argument("--resume", action="store_true",
                    help="with --checkpoint-dir: restore the newest complete checkpoint in DIR, skip "
                         "the input it consumed and continue (starts afresh if DIR has none)")
    ap.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    ap.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), default=None,
                    help="with --backend llvm: LLVM optimization before the JIT: 0 none, 1 a light "
                         "pipeline (3-4x less compile time; slower scans), 2 LLVM's O2, 3 O3 (default: 2, "
                         "and with --run 1 unless the files read total >= 512 MiB: jit.RUN_O2_BYTES)")
    ap.add_argument("--jit-cache", metavar="DIR|off", default=None,
                    help="with --run --backend llvm: keep the JIT's machine code in DIR, keyed by the "
                         "LLVM IR text, the opt level and the LLVM build, and load it instead of "
                         "compiling again (default: $TOASTER_JIT_CACHE, else ~/.cache/toaster/jit; "
                         "'off': always compile)")
    ap.add_argument("--stream-dir", action="append", default=[], metavar="REL=DIR",
                    help="with --run --backend spark: read stream REL from the CSV files arriving in DIR "
                         "(Spark Structured Streaming; repeatable) instead of its FROM FILE; needs "
                         "--checkpoint-dir (Spark's checkpoint location; restarts resume from it)")
    ap.add_argument("--stream-once", action="store_true",
                    help="with --stream-dir: process the files present now, print the views, exit "
                         "(default: keep running, a micro-batch as files arrive)")
    ap.add_argument("--stream-max-files", metavar="N", type=int, default=None,
                    help="with --stream-dir: at most N new files per relation in a micro-batch")
    ap.add_argument("--base-dir", default=None, help="resolve relative FROM FILE / INCLUDE paths here")
    ap.add_argument("--traceback", action="store_true", help="on an internal error, print the traceback")
    return ap


def console_main() -> None:
    """The `toaster` / `python -m toaster.pipeline` entry point: main(), then exit without the
    interpreter's teardown. Arrow's native thread pools can abort the process while Python
    finalizes (`terminate called without an active exception`, exit -6, seen intermittently
    under load; apache/arrow#34314) after the run has finished and printed everything.

    The command line does no linear algebra: numpy's OpenBLAS starts no thread pool (its idle
    threads spin ~0.1 s after numpy's import: ~0.04 s of CPU, 3 % of a TPC-H Q17 `--run`),
    unless the environment asks for one."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError):     # the reader went away: nothing left to say
            code = code or 2
    os._exit(code)


def main(argv=None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        return run(args)
    except ToasterError as e:
        print(str(e), file=sys.stderr)
        return 2
    except InternalError as e:
        if args is not None and args.traceback:
            traceback.print_exception(e.cause)
        print(f"toaster: {e}; rerun with --traceback for details", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("toaster: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, and keep Python from complaining at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print("toaster: output closed before the end (broken pipe)", file=sys.stderr)
        return 2


def parse_add(specs) -> list:
    """`MODULE:SPEC[@AFTER]` items -> (spec, after) pairs, importing each MODULE."""
    out = []
    for item in specs:
        mod, sep, rest = item.partition(":")
        if not sep:
            mod, rest = None, item
        spec, _, after = rest.partition("@")
        if mod:
            try:
                importlib.import_module(mod)
            except ImportError as e:
                raise UsageError(f"--add-pass {item}: cannot import module {mod}: {e}") from None
            except Exception as e:   # a plugin that fails while importing is the user's module
                raise UsageError(f"--add-pass {item}: importing {mod} failed: "
                                 f"{type(e).__name__}: {e}") from None
        out.append((spec, after or None))
    return out


def parse_pass_options(items) -> dict:
    out: dict = {}
    for item in items:
        key, eq, value = item.partition("=")
        name, dot, opt = key.partition(".")
        if not eq or not dot or not name or not opt:
            raise UsageError(f"--pass-option {item!r}: expected PASS.KEY=VALUE")
        out.setdefault(name, {})[opt] = value
    return out


def list_passes(add) -> str:
    from toaster import passes as P
    from toaster.backends import BACKENDS
    from toaster.pipeline import Compilation
    lines = ["registered passes:"]
    for name in sorted(P.REGISTRY):
        cls = P.REGISTRY[name]
        flag = "" if cls.can_skip() else "  [required]"
        lines.append(f"  {name:18s} {cls.takes:>5s} -> {cls.gives:<5s}  {cls.description}{flag}")
        for f in cls.option_fields():
            lines.append(f"  {'':18s}   option {f.name} = {P._render(f.default) if f.default is not None else 'none'}"
                         f"  ({getattr(f.type, '__name__', f.type)})")
    comp = Compilation("", add=add, start="sql")
    for name, passes in comp.pipelines.items():
        lines.append(f"{name} pipeline: " + " ".join(p.spec() for p in passes))
    lines.append("backends:")
    for b in BACKENDS.values():
        lines.append(f"  {b.name:8s} runs stage {b.stage} ({b.branch} pipeline)  {b.description}")
    return "\n".join(lines)


def _stage_list(spec: str) -> list[tuple[str | None, str]]:
    from toaster.pipeline import ALL_STAGES, BRANCHES, VIEWS
    if spec == "all":
        return [(None, s) for s in ALL_STAGES]
    out = []
    for item in spec.split(","):
        branch, _, stage = item.strip().rpartition(":")
        if stage not in ALL_STAGES and stage not in VIEWS:
            raise UsageError(f"unknown stage {stage!r} (stages: {', '.join(ALL_STAGES)}; views: {', '.join(VIEWS)})")
        if branch and branch not in BRANCHES:
            raise UsageError(f"unknown branch {branch!r} (branches: {', '.join(BRANCHES)})")
        out.append((branch or None, stage))
    return out


def run(args) -> int:
    from toaster.backends import get_backend
    from toaster.pipeline import compile_file, load_pass_modules, print_stage
    # what names passes needs them all registered; a plain compilation imports only the local
    # branch's pass modules (Compilation: the distributed branch's when it is first asked for)
    load_pass_modules(local_only=not (args.list_passes or args.add_pass or args.skip_pass
                                      or args.pass_option or args.print_before or args.print_after))
    add = parse_add(args.add_pass)
    if args.list_passes:
        print(list_passes(add))
        return 0
    if not args.query:
        raise UsageError("no query file given")
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, not {args.batch_size}")
    _check_stream_flags(args)
    if args.opt_level is not None and args.backend != "llvm":
        raise UsageError("--opt-level applies to --backend llvm only")
    if args.jit_cache is not None and args.backend != "llvm":
        raise UsageError("--jit-cache applies to --backend llvm only")
    if not args.stream_dir:
        _check_checkpoint_flags(args)
    backend = get_backend(args.backend)
    mode = args.mode or backend.default_mode
    stages = _stage_list(args.dump_ir) if args.dump_ir else []
    on_pass, print_before = _pass_hooks(args)
    comp = compile_file(args.query, mode=mode, base_dir=args.base_dir, skip=args.skip_pass, add=add,
                        pass_options=parse_pass_options(args.pass_option), master=args.master,
                        strategy=args.strategy, depth=args.depth, on_pass=on_pass,
                        print_before=print_before)
    if args.explain or args.dot:
        from toaster.m3.explain import explain, to_dot
        if args.explain:
            print(explain(comp.m3))
            if args.backend == "spark":
                from toaster.backends.spark.engine import explain_jobs
                print(explain_jobs(comp.stage("spark")))
        if args.dot and args.dot.lower().endswith((".png", ".svg", ".pdf")):
            from toaster.m3.explain import draw_graph
            draw_graph(comp.m3, args.dot)
        elif args.dot:
            with open(args.dot, "w") as f:
                f.write(to_dot(comp.m3))
    if args.dump_dir and not stages:
        stages = [(None, "llvm"), (None, "spark")] if not args.run else []
    from toaster.pipeline import VIEWS
    for branch, stage in stages:
        try:
            ir = comp.stage(VIEWS.get(stage, stage), branch)
        except ToasterError as e:
            if args.dump_ir:
                raise
            print(f"note: stage {stage} not produced: {e}", file=sys.stderr)
            continue
        if args.dump_ir:
            label = f"{branch}:{stage}" if branch else stage
            if stage in ("dist", "spark") and comp.options.mode != "batch":
                label += " (from the batch-mode M3 program)"
            print(f"==== {label} " + "=" * 40)
            print(print_stage(stage, ir).rstrip("\n"))
    named = {n for item in args.print_before + args.print_after for n in item.split(",")}
    for branch, pm in (comp.managers.items() if named else ()):
        wanted = [i for i, p in enumerate(pm.passes) if p.name in named or "all" in named]
        if wanted:
            pm.run(comp.stores[branch], max(wanted))
    if args.run and args.stream_dir:
        _run_stream(comp, args)
    elif args.run:
        _run_engine(comp, args)
    elif not (stages or args.explain or args.dot or named):
        comp.stage(backend.stage, backend.branch)   # compile only: check that the backend accepts it
    if args.time_passes:
        _print_times(comp)
    return 0


def _pass_hooks(args):
    """Callbacks the pass manager calls: --dump-dir files, --print-after, --print-before."""
    from toaster.pipeline import print_stage
    after = {n for item in args.print_after for n in item.split(",")}
    before = {n for item in args.print_before for n in item.split(",")}
    counter = [0]
    if args.dump_dir:
        os.makedirs(args.dump_dir, exist_ok=True)

    def on_pass(rec):
        if rec.reused:
            return
        counter[0] += 1
        name = rec.spec.split("{")[0]
        if args.dump_dir:
            prefix = "" if rec.branch == "local" else f"{rec.branch}."
            path = os.path.join(args.dump_dir, f"{counter[0]:02d}-{prefix}{name}.{rec.gives}.txt")
            with open(path, "w") as f:
                f.write(print_stage(rec.gives, rec.output))
        if name in after or "all" in after:
            print(f"==== after {rec.spec} ({rec.branch}, stage {rec.gives}) " + "=" * 30)
            print(print_stage(rec.gives, rec.output).rstrip("\n"))

    def on_before(p, ir):
        if p.name in before or "all" in before:
            print(f"==== before {p.spec()} (stage {p.takes}) " + "=" * 30)
            print(print_stage(p.takes, ir).rstrip("\n"))
    return on_pass, (on_before if before else None)


def _print_times(comp) -> None:
    total = 0.0
    print(f"{'branch':12s} {'pass':40s} {'seconds':>9s}  changed", file=sys.stderr)
    for r in comp.trace:
        if r.reused:
            continue
        total += r.seconds
        print(f"{r.branch:12s} {r.spec:40s} {r.seconds:9.4f}  {'yes' if r.changed else 'no'}", file=sys.stderr)
    print(f"{'':12s} {'total':40s} {total:9.4f}", file=sys.stderr)


def _check_stream_flags(args) -> None:
    if not args.stream_dir:
        for flag, given in (("--stream-once", args.stream_once), ("--stream-max-files", args.stream_max_files)):
            if given:
                raise UsageError(f"{flag} needs --stream-dir")
        return
    if not args.run or args.backend != "spark":
        raise UsageError("--stream-dir needs --run --backend spark")
    if args.checkpoint_dir is None:
        raise UsageError("--stream-dir needs --checkpoint-dir (Spark's checkpoint location)")
    for flag, given in (("--checkpoint-every", args.checkpoint_every is not None), ("--resume", args.resume),
                        ("--batch-size", args.batch_size is not None)):
        if given:    # a checkpoint after every micro-batch, restarts always resume, Spark sizes batches
            raise UsageError(f"{flag} does not apply to --stream-dir")
    if args.stream_max_files is not None and args.stream_max_files < 1:
        raise UsageError(f"--stream-max-files must be at least 1, not {args.stream_max_files}")
    for item in args.stream_dir:
        rel, eq, directory = item.partition("=")
        if not eq or not rel or not directory:
            raise UsageError(f"--stream-dir wants REL=DIR, not {item!r}")


def _run_stream(comp, args) -> None:
    """--stream-dir: maintain the views over Structured Streaming sources
    (toaster.backends.spark.streaming); Spark's checkpoint location is --checkpoint-dir, toaster's
    checkpoints go in DIR/toaster and the engine's delta log in DIR/spark-log."""
    from toaster.backends.spark.session import get_spark
    from toaster.backends.spark.streaming import maintain
    from toaster.runtime.output import format_changes, format_results, result_changes
    spark_log = os.path.join(args.checkpoint_dir, SPARK_LOG)
    shutil.rmtree(spark_log, ignore_errors=True)
    spark = get_spark(args.master)
    engine = comp.engine("spark", checkpoint_dir=spark_log)
    sources = dict(item.split("=", 1) for item in args.stream_dir)
    state = {"before": None}

    def on_batch(eng, batch_id, batches):
        if args.emit == "changes":
            after = eng.results()
            sys.stdout.write(format_changes(batch_id + 1, result_changes(state["before"], after), args.output))
            state["before"] = after
        elif not args.stream_once:
            out = format_results(eng.results(), args.output)
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
    try:
        stream = maintain(engine, spark, sources, args.checkpoint_dir, base_dir=args.base_dir,
                          trigger={"availableNow": True} if args.stream_once else None,
                          max_files_per_trigger=args.stream_max_files,
                          on_batch=on_batch if args.emit == "changes" or not args.stream_once else None,
                          on_start=lambda eng: state.update(before=eng.results() if args.emit == "changes" else None))
        try:
            stream.awaitTermination()
        finally:
            stream.stop()
        if args.stream_once and args.emit != "changes":
            out = format_results(engine.results(), args.output)
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
        print(f"toaster: micro-batches applied {len(stream.applied)}, already applied before a "
              f"restart {len(stream.skipped)}", file=sys.stderr)
    finally:
        engine.close()
        shutil.rmtree(spark_log, ignore_errors=True)


def _check_checkpoint_flags(args) -> None:
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise UsageError(f"--checkpoint-every must be at least 1, not {args.checkpoint_every}")
    if args.checkpoint_dir is None:
        for flag, given in (("--checkpoint-every", args.checkpoint_every is not None),
                            ("--resume", args.resume)):
            if given:
                raise UsageError(f"{flag} needs --checkpoint-dir")
    elif not args.run:
        raise UsageError("--checkpoint-dir needs --run")


def _run_engine(comp, args) -> None:
    import itertools
    import time

    from toaster.checkpoint import InputPosition, checkpoint_name, latest_checkpoint, prune_checkpoints
    from toaster.runtime.csv_source import open_sources
    from toaster.runtime.output import format_changes, format_results, result_changes
    from toaster.runtime.read_ahead import ReadAhead
    ckpt_dir = args.checkpoint_dir
    read_ahead = None
    spark_log = None
    if args.backend == "spark" and ckpt_dir is not None:
        # the spark engine's own durable delta log (not a toaster checkpoint: never read on
        # --resume) beside the checkpoints, so a killed run's log is cleared by the next run
        spark_log = os.path.join(ckpt_dir, SPARK_LOG)
        shutil.rmtree(spark_log, ignore_errors=True)
        engine = comp.engine(args.backend, checkpoint_dir=spark_log)
        reads = engine
    else:
        def options_for(reads) -> dict:
            options = {} if args.opt_level is None else {"opt_level": args.opt_level}
            if args.backend == "llvm":
                if args.opt_level is None:
                    from toaster.backends.llvm.jit import run_opt_level
                    options["opt_level"] = run_opt_level(reads, args.base_dir)
                cache = jit_cache_dir(args.jit_cache)
                if cache is not None:
                    options["object_cache"] = cache
                # the run stops at the first error and never reads the views after it: a batch
                # need not be undone, so no undo records for checked integers (a file is one
                # batch: Q17's log would be ~100 MB, ~0.1 s of a 1.2 s run)
                options["atomic"] = False
            return options
        engine, reads = _build_engine(comp, args.backend, ckpt_dir is None, options_for)
    try:
        if ckpt_dir is not None:
            engine._checkpoint_state(with_tables=False)    # refuses backends without checkpoints now
        relations = list(reads.relations.values())
        if not any(r.source is not None for r in relations):
            print(f"toaster: warning: no relation of {args.query} declares a source (FROM FILE); "
                  "the views stay as they start", file=sys.stderr)
        # only the relations whose updates can change a view, only the columns the engine reads;
        # batches are read as they are applied (chunked files): memory O(chunk + batch + state)
        tables, streams = open_sources(relations, batch_size=args.batch_size, base_dir=args.base_dir,
                                       relations_used=reads.relations_needed(),
                                       columns=reads.columns_needed)
        # the next batches are parsed while the engine applies one (and while it compiles)
        batches = read_ahead = ReadAhead(itertools.chain(tables, streams))
        if engine is None:
            engine = reads.engine()
        position = InputPosition(args.batch_size, {r.name: r.source.path for r in relations if r.source})
        saved_at = None          # position.batches of the newest checkpoint on disk
        if args.resume:
            newest = latest_checkpoint(ckpt_dir)
            if newest is None:
                print(f"toaster: no checkpoint in {ckpt_dir}; starting from the beginning", file=sys.stderr)
            else:
                batches = position.skip(batches, engine.restore(newest))
                saved_at = position.batches
                print(f"toaster: resumed from {newest} ({position.batches:,} batches already applied)",
                      file=sys.stderr)
        every = args.checkpoint_every

        def save():
            nonlocal saved_at
            path = os.path.join(ckpt_dir, checkpoint_name(position.batches))
            engine.checkpoint(path, position.to_json())
            prune_checkpoints(ckpt_dir, keep=2)
            saved_at = position.batches
        events = applied = 0
        before = engine.results() if args.emit == "changes" else None
        t0, cpu0 = time.perf_counter(), time.process_time()
        for b in _progress(batches, args):
            engine.apply(b)
            position.advance(b)
            events += len(b)
            applied += 1
            if before is not None:
                after = engine.results()
                sys.stdout.write(format_changes(position.batches, result_changes(before, after), args.output))
                before = after
            if ckpt_dir is not None and every is not None and position.batches % every == 0:
                save()
        if ckpt_dir is not None and saved_at != position.batches:
            save()                  # the final state, so a later --resume has nothing left to do
        seconds = time.perf_counter() - t0
        if before is None:
            out = format_results(engine.results(), args.output)
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
        rate = f"{events / seconds:,.0f} events/s" if seconds > 0 else "-"
        cached = getattr(getattr(engine, "_ee", None), "toaster_from_cache", False)
        print(f"toaster: {events:,} events in {applied:,} batches, {seconds:.2f} s "
              f"({rate}; {time.process_time() - cpu0:.2f} s CPU in this process)"
              + ("; machine code from the JIT cache" if cached else ""), file=sys.stderr)
    finally:
        if read_ahead is not None:
            read_ahead.close()
        if engine is None:                  # built in the background: wait for it, then free it
            engine = reads.engine_if_built()
        if engine is not None:
            engine.close()
        if spark_log is not None:
            shutil.rmtree(spark_log, ignore_errors=True)


JIT_CACHE_ENV = "TOASTER_JIT_CACHE"
JIT_CACHE_KEEP = 256        # objects kept (the newest); a TPC-H query's is 50-300 KB
_OFF = ("off", "0", "no", "false", "none", "")


def jit_cache_dir(flag: str | None) -> str | None:
    """The directory of the llvm engine's machine-code cache (jit.compile_module's
    object_cache), or None for no cache: --jit-cache, else $TOASTER_JIT_CACHE, else
    $XDG_CACHE_HOME/toaster/jit (~/.cache/toaster/jit). Only a directory this user owns is
    used (machine code others could write is never loaded); the oldest objects beyond
    JIT_CACHE_KEEP are removed."""
    value = flag if flag is not None else os.environ.get(JIT_CACHE_ENV)
    if value is not None and value.strip().lower() in _OFF:
        return None
    if value is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        value = os.path.join(base, "toaster", "jit")
    path = os.path.abspath(value)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            if flag is not None:
                raise UsageError(f"--jit-cache {flag}: the directory must belong to you and not be "
                                 "writable by others")
            return None
        _prune_jit_cache(path)
    except OSError:
        return None             # no cache: compiling is always correct
    return path


def _prune_jit_cache(path: str) -> None:
    entries = [e for e in os.scandir(path) if e.name.endswith(".o")]
    if len(entries) <= JIT_CACHE_KEEP:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for e in entries[:len(entries) - JIT_CACHE_KEEP]:
        try:
            os.unlink(e.path)
        except OSError:
            pass


class _EngineInBackground:
    """What an engine being built in a thread reads (ProgramReads), and the engine when ready."""

    def __init__(self, reads, future):
        self.relations = {r.name: r for r in reads.program.relations}
        self.relations_needed = reads.relations_needed
        self.columns_needed = reads.columns_needed
        self._future = future

    def engine(self):
        return self._future.result()

    def engine_if_built(self):
        """The engine, or None if building it failed (cleanup after another error)."""
        try:
            return self._future.result()
        except BaseException:
            return None


def _build_engine(comp, backend: str, in_background: bool, options_for=lambda reads: {}):
    """(engine, reads): a backend that knows what it reads before it is built (`Backend.reads`:
    llvm) is built in a thread -- the JIT runs in LLVM without the GIL -- while the caller opens
    and reads the input; then engine is None and reads.engine() waits for it. options_for(reads
    or None) gives the engine's options (what it reads may choose them)."""
    from concurrent.futures import ThreadPoolExecutor
    from toaster.backends import get_backend
    b = get_backend(backend)
    # the Python stages that `reads` needs run here, the rest in the thread: what the llvm engine
    # reads is the imperative program's (its LLVMModule's .program), so imp_to_llvm runs in the
    # thread, beside the reading
    if b.reads is None:
        reads = None
    elif backend == "llvm":
        from toaster.runtime.reads import ProgramReads
        reads = ProgramReads(comp.stage("imp", b.branch))
    else:
        reads = b.reads(comp.stage(b.stage, b.branch))
    options = options_for(reads)
    if reads is None or not in_background:
        engine = comp.engine(backend, **options)
        return engine, engine
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toaster-build-engine")
    future = pool.submit(comp.engine, backend, **options)
    pool.shutdown(wait=False)
    return None, _EngineInBackground(reads, future)


def _progress(batches, args):
    """A progress bar (tqdm) on a terminal, shown once a run has lasted a second (the batch
    count is not known before the files are read); the batches as they are otherwise."""
    if not sys.stderr.isatty():
        return batches
    try:
        from tqdm import tqdm
    except ImportError:
        return batches
    return tqdm(batches, unit="batch", file=sys.stderr, leave=False, desc="events", delay=1.0)
