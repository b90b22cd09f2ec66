"""The command line: `python -m toaster.pipeline QUERY [options]` (also installed as `toaster`).

Exit codes: 0 success; 2 an error the user can fix (bad SQL, input, flags, pass names, a construct
not supported yet), printed as one line; 3 an internal error, one line naming the pass that
failed (`--traceback` prints the Python traceback too); 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from toaster.cli_run import (check_checkpoint_flags, check_spark_input_flags, check_stream_flags, run_engine,
                             run_stream)
from toaster.errors import InternalError, ToasterError, UsageError


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
    ap.add_argument("--spark-input", choices=("driver", "executors"), default="driver",
                    help="with --run --backend spark: 'driver' (default) reads the CSV sources with Arrow on "
                         "the driver; 'executors' has Spark's tasks read each stream's FROM FILE as byte ranges "
                         "the driver finds without parsing (the same --batch-size steps and checkpoints): "
                         "the executors read, check and pre-aggregate the relations with input blocks "
                         "(--explain names them)")
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
    check_stream_flags(args)
    check_spark_input_flags(args)
    if args.opt_level is not None and args.backend != "llvm":
        raise UsageError("--opt-level applies to --backend llvm only")
    if args.jit_cache is not None and args.backend != "llvm":
        raise UsageError("--jit-cache applies to --backend llvm only")
    if not args.stream_dir:
        check_checkpoint_flags(args)
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
            sql = comp.ir.get("sql")
            print(explain(comp.m3, getattr(sql, "notes", ())))
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
        run_stream(comp, args)
    elif args.run:
        run_engine(comp, args)
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
