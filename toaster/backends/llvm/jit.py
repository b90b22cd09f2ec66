"""JIT compilation of the generated LLVM IR: parse, verify, optimize, generate machine code, and
the machine-code cache. The engine (engine.py) calls `compile_module` once per program.

Where the JIT's time goes (TPC-H Q1, Q3, Q17 tuple mode: 94-102 functions, 130-190 KB of IR):
LLVM's O2 IR passes ~0.35-0.5 s and machine code generation ~0.2-0.3 s, most of it on functions
that never run per tuple. Every map has its own lifecycle and maintenance functions (init,
destroy, load, compact, accessors) and the undo log its rollback; O2 inlines the map's probing,
rehashing and upserts into each of them. `cold_functions` finds the functions off the per-tuple
path and compiles them without optimization (`optnone`, which also selects LLVM's fast
instruction selector for them): the JIT costs 40-60 % less and the triggers run the same code.
"""
from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm

from toaster.backends.llvm.feed import EXTERNAL as FEED_EXTERNAL
from toaster.backends.llvm.hashmap import Runtime

_initialized = False


def _init_llvm():
    global _initialized
    if _initialized:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libc = ctypes.CDLL(None)
    # the generated code calls these libc functions; bind them explicitly
    for name in Runtime.NAMES + FEED_EXTERNAL:
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    _initialized = True


# --opt-level 1: the passes that matter for hash-map-bound trigger code (promote the locals to
# registers, fold, merge redundant loads, drop dead code) without O2's inliner, loop and vector
# passes. Measured on TPC-H (README, "Compile time"): 3-4x less compile time (Q1 0.73 -> 0.19 s
# CPU), the same native speed on Q1 and Q17, -17% on Q3, and 3x slower on Q6's vectorizable scan.
LIGHT_PASSES = ("always_inliner", "sroa", "instruction_combine", "simplify_cfg", "new_gvn",
                "dead_code_elimination", "simplify_cfg")
OPT_LEVELS = (0, 1, 2, 3)

# `--run --backend llvm` without --opt-level: LLVM's O2 only when the files the run reads total
# this much. A run over files ends, so O2's compile time must be repaid by faster triggers before
# the input does: on TPC-H SF 0.1 (74-93 MB read) O2 costs 0.05-0.31 s more CPU than the light
# pipeline (--opt-level 1) and saves 0.003 (Q6), 0.01 (Q1, Q3) and 0.11 s (Q17) of maintenance
# (tuple mode; README "Benchmarks", end to end): it breaks even at ~0.2 GB of input (Q17) to
# ~2 GB (Q3); 512 MiB is between, and an SF 1 run (0.75-1 GB) gets O2.
RUN_O2_BYTES = 512 << 20


def run_opt_level(reads, base_dir: str | None) -> int:
    """The LLVM opt level of a `--run` not given one: 1, or 2 when the input it reads (the
    relations `reads` needs, by their files' sizes) is at least RUN_O2_BYTES."""
    import os
    from toaster.runtime.csv_source import resolve_path
    if reads is None:
        return 2
    needed = {n.upper() for n in reads.relations_needed()}
    size = 0
    for r in reads.program.relations:
        if r.source is not None and r.name.upper() in needed:
            try:
                size += os.path.getsize(resolve_path(r.source.path, base_dir))
            except OSError:
                pass            # the reader reports a missing file, with its place in the query
    return 2 if size >= RUN_O2_BYTES else 1


# Exported functions that run outside the per-tuple path (hashmap.py's per-map accessors and
# lifecycle, codegen's toaster.* lifecycle, undo.py's rollback): at most once per batch and
# O(map) when they do (compact), or on failure (rollback), or once per run. Everything reachable
# only through them is cold too (a map's `set`, used by rollback and load, unless a trigger
# assigns the map). The entry points (process_<REL>, the feed, the Spark engine's bulk
# accessors) and all they reach stay at the requested level.
COLD_EXPORTS = re.compile(r"\.(compact|load|init|destroy|count|keys|vals)$"
                          r"|^toaster\.(init|destroy|compact|rollback)$")
# The CPU the machine code targets: "host" (default) is this machine's CPU and features (LLVM's
# host detection: AVX2 / AVX-512 where present, so the branch-free scan sums of scan_sum.py
# vectorize 4-8 wide instead of SSE2's 2); "generic" (TOASTER_JIT_CPU=generic) is the baseline
# x86-64 code of earlier versions, for reproducible timings across machines. Part of the
# machine-code cache key, so a cache shared by machines never hands one CPU another's code.
JIT_CPU_ENV = "TOASTER_JIT_CPU"


def jit_cpu() -> tuple[str, str]:
    """(cpu name, feature string) the JIT targets: the host's, or ("", "") under
    TOASTER_JIT_CPU=generic (LLVM's generic CPU of the process triple)."""
    import os
    choice = os.environ.get(JIT_CPU_ENV, "host").strip().lower()
    if choice == "generic":
        return "", ""
    if choice != "host":
        from toaster.errors import UsageError
        raise UsageError(f"{JIT_CPU_ENV} must be 'host' or 'generic', not {choice!r}")
    _init_llvm()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


# bumped when what the JIT does to a given IR text changes: part of the machine-code cache key
JIT_POLICY = "cold-optnone-1"

_DEFINE = re.compile(r'^define ([^@]*)@"?([^"(]+)"?\(', re.M)
_REFERENCE = re.compile(r'@"?([^"(\s,)]+)')


def cold_functions(*ir_texts: str) -> set[str]:
    """Names of the functions defined in the IR texts (one module once linked) that only the
    COLD_EXPORTS functions reach, those included."""
    bodies: dict[str, str] = {}
    exported: list[str] = []
    for text in ir_texts:
        heads = list(_DEFINE.finditer(text))
        for i, m in enumerate(heads):
            name = m.group(2)
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            bodies[name] = text[m.end():end]
            if "internal" not in m.group(1).split():
                exported.append(name)
    cold_roots = {n for n in exported if COLD_EXPORTS.search(n)}
    hot: set[str] = set()
    stack = [n for n in exported if n not in cold_roots]
    while stack:
        name = stack.pop()
        if name in hot or name in cold_roots or name not in bodies:
            continue
        hot.add(name)
        stack.extend(_REFERENCE.findall(bodies[name]))
    return set(bodies) - hot


def compile_module(ir_text: str, opt_level: int = 2, object_cache: str | None = None, extra_ir: tuple = ()):
    """Parse, verify, optimize and JIT an LLVM IR text. Returns (execution engine, module, target
    machine). opt_level: 0 no IR passes, 1 LIGHT_PASSES, 2 and 3 LLVM's O2 / O3 pipelines; the
    cold functions (cold_functions) are not optimized at any level.

    object_cache: a directory of machine code keyed by the IR text, the options and the LLVM
    build (MCJIT's object cache): a process that finds the text's object there loads it instead
    of optimizing and compiling again (the Spark executors' processes share one per machine).
    extra_ir: more IR texts linked into the module before it is optimized (feed.py's entry)."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {OPT_LEVELS}, not {opt_level!r}")
    _init_llvm()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    for text in extra_ir:
        extra = llvm.parse_assembly(text)
        extra.verify()
        mod.link_in(extra)
    cached = None
    cpu, features = jit_cpu()
    if object_cache is not None:
        import hashlib
        import llvmlite
        import os
        key = hashlib.sha256(f"{llvmlite.__version__}|{llvm.llvm_version_info}|{llvm.get_process_triple()}|"
                             f"{JIT_POLICY}|{opt_level}|{cpu}|{features}|".encode() + ir_text.encode()
                             + "".join(extra_ir).encode()).hexdigest()
        cache_path = os.path.join(object_cache, f"{key}.o")
        try:
            with open(cache_path, "rb") as f:
                cached = f.read()
        except OSError:
            cached = None
    # an unresolved symbol would abort the process inside the JIT: refuse it here
    for f in mod.functions:
        if f.is_declaration and f.name not in Runtime.NAMES + FEED_EXTERNAL and not f.name.startswith("llvm."):
            raise RuntimeError(f"generated LLVM IR calls an unknown external function {f.name!r}")
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=cpu, features=features, opt=opt_level)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    if opt_level > 0 and cached is None:
        cold = cold_functions(ir_text, *extra_ir)
        for f in mod.functions:
            if f.name in cold and not f.is_declaration:
                f.add_function_attribute("noinline")        # optnone requires it
                f.add_function_attribute("optnone")
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=max(opt_level, 2)))
        if opt_level == 1:
            mpm = llvm.create_new_module_pass_manager()
            for name in LIGHT_PASSES:
                getattr(mpm, f"add_{name}_pass")()
        else:
            mpm = pb.getModulePassManager()
        mpm.run(mod, pb)
        mod.verify()
    ee = llvm.create_mcjit_compiler(mod, tm)
    if object_cache is not None:
        ee.set_object_cache(lambda _m, data: _store_object(cache_path, data), lambda _m: cached)
    ee.finalize_object()
    ee.toaster_from_cache = cached is not None      # loaded, not compiled (callers count JITs)
    return ee, mod, tm


def _store_object(path: str, data: bytes) -> None:
    import os
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)        # atomic: a reader sees a whole object or none
    except OSError:
        pass                         # a cache: compiling again is always correct
