"""The `--run` half of the command line (toaster.cli parses and compiles): stream flags and
checkpoint flags checked, the engine built (in the background while the input is opened), the
input fed batch by batch with progress, the views printed; `--stream-dir` over Structured
Streaming; the llvm JIT's object cache directory."""
from __future__ import annotations

import os
import shutil
import sys

from toaster.errors import UsageError

SPARK_LOG = "spark-log"     # in --checkpoint-dir: the spark engine's own delta log (docs/checkpoints.md)

def check_stream_flags(args) -> None:
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


def run_stream(comp, args) -> None:
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


def check_spark_input_flags(args) -> None:
    if args.spark_input == "driver":
        return
    if not args.run or args.backend != "spark":
        raise UsageError("--spark-input executors needs --run --backend spark")
    if args.stream_dir:          # Structured Streaming reads its micro-batches on the executors already
        raise UsageError("--spark-input executors does not take --stream-dir")


def check_checkpoint_flags(args) -> None:
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise UsageError(f"--checkpoint-every must be at least 1, not {args.checkpoint_every}")
    if args.checkpoint_dir is None:
        for flag, given in (("--checkpoint-every", args.checkpoint_every is not None),
                            ("--resume", args.resume)):
            if given:
                raise UsageError(f"{flag} needs --checkpoint-dir")
    elif not args.run:
        raise UsageError("--checkpoint-dir needs --run")


def run_engine(comp, args) -> None:
    import itertools
    import time

    from toaster.checkpoint import InputPosition, checkpoint_name, latest_checkpoint, prune_checkpoints
    from toaster.runtime.csv_source import open_sources
    from toaster.runtime.output import format_changes, format_results, result_changes
    from toaster.runtime.read_ahead import ReadAhead
    from toaster.runtime.batch import Batch
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
        # executor input plans its steps for the engine's partitions: built before the input
        engine, reads = _build_engine(comp, args.backend, ckpt_dir is None and args.spark_input == "driver",
                                      options_for)
    try:
        if ckpt_dir is not None:
            engine._checkpoint_state(with_tables=False)    # refuses backends without checkpoints now
        relations = list(reads.relations.values())
        if not any(r.source is not None for r in relations):
            print(f"toaster: warning: no relation of {args.query} declares a source (FROM FILE); "
                  "the views stay as they start", file=sys.stderr)
        # only the relations whose updates can change a view, only the columns the engine reads;
        # batches are read as they are applied (chunked files): memory O(chunk + batch + state)
        # a window of sequence-ordered streams is one step (spark: one job for all its relations)
        tables, streams = open_sources(relations, batch_size=args.batch_size, base_dir=args.base_dir,
                                       relations_used=reads.relations_needed(),
                                       columns=reads.columns_needed, steps=True)
        if args.spark_input == "executors":
            # the streams as byte ranges of their files, in the same steps (file_ranges.py): the
            # driver finds where rows start, Spark's tasks read and parse them
            from toaster.backends.spark.file_ranges import range_steps
            streams = range_steps(relations, args.batch_size, args.base_dir, relations_used=reads.relations_needed(),
                                  parts=engine.program.partitions)
        # the next steps are parsed while the engine applies one (and while it compiles)
        steps = read_ahead = ReadAhead(itertools.chain(tables, streams))
        if engine is None:
            engine = reads.engine()
        position = InputPosition(args.batch_size, {r.name: r.source.path for r in relations if r.source})
        saved_at = None          # position.batches of the newest checkpoint on disk
        if args.resume:
            newest = latest_checkpoint(ckpt_dir)
            if newest is None:
                print(f"toaster: no checkpoint in {ckpt_dir}; starting from the beginning", file=sys.stderr)
            else:
                steps = position.skip(steps, engine.restore(newest))
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
        for step in _progress(steps, args):
            if not isinstance(step[0], Batch):        # ByteRanges: read by the executors
                engine.apply_frames([(b.relation, b) for b in step])
            elif len(step) == 1:
                engine.apply(step[0])
            else:
                engine.apply_many(step)
            for b in step:
                position.advance(b)
                events += len(b)
            applied += len(step)
            if before is not None:
                after = engine.results()
                sys.stdout.write(format_changes(position.batches, result_changes(before, after), args.output))
                before = after
            # a checkpoint at the first step end at or after every N batches (a step is not split)
            if ckpt_dir is not None and every is not None and position.batches - (saved_at or 0) >= every:
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


def _progress(steps, args):
    """A progress bar (tqdm) on a terminal, shown once a run has lasted a second (the batch
    count is not known before the files are read); the steps as they are otherwise."""
    if not sys.stderr.isatty():
        return steps
    try:
        from tqdm import tqdm
    except ImportError:
        return steps
    return tqdm(steps, unit="step", file=sys.stderr, leave=False, desc="events", delay=1.0)
