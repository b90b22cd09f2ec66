"""Pass 'dist_to_spark': the PySpark driver program, built as a Python `ast` module.

The module holds
  * one function per statement block, from the block's imperative IR (the shared lowering,
    toaster/backends/spark/blocks.py, then pygen; the function's docstring is that imperative
    code): `local_block_N(m_A, ...)` updates driver dicts in place;
    `dist_block_N(m_A, ...)` runs on one partition: it updates the partition's resident views
    in place (see state.py), starts the temps it writes empty, and returns the written maps;
  * `class Program(DistRuntime)` with one method per batch trigger that runs the blocks in
    order: local blocks with `self.run_local` (now on the driver, or after the job when they
    read a Gather's result), dist blocks with `self.run_dist`, exchanges with
    `self.repart / self.scatter / self.gather` (see runtime.py). These calls only plan: the
    dist blocks and exchanges of every trigger of a batch run as one Spark job at its end (a
    second one only when a Scatter needs a Gather's result), each dist block one stage, the
    exchanges of one block one shuffle;
  * `if __name__ == '__main__': run_main(Program)` for spark-submit.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from toaster.errors import UnsupportedError
from toaster.passes import Options, Pass, register
from toaster.dist.ir import Local, Dist, Replicated, DistProgram, Exchange, delta_map_name, map_names
from toaster.backends.spark.blocks import BLOCK_PASSES, BlockCode, block_passes, lower_block
from toaster.backends.spark.native_input import spread_blocks
from toaster.backends.spark.pygen import block_function, map_param, name, call, attr_call, const, tuple_of, assign
from toaster.imperative.printer import print_stmts


@dataclass(frozen=True)
class SparkProgram:
    """The 'spark' stage: generated PySpark source plus what an engine needs to run it."""
    source: str
    relations: tuple
    queries: tuple
    dist: DistProgram
    blocks: tuple = ()     # tuple[BlockCode, ...]: each block's M3 and imperative code
    native: object = None  # native.PartitionProgram when dist blocks run as native code

    def __str__(self) -> str:
        return self.source


def _self_attr(attr: str) -> ast.Attribute:
    return ast.Attribute(name("self"), attr, ast.Load())


def _self_map(kind: str, m: str) -> ast.Subscript:
    return ast.Subscript(_self_attr(kind), const(m), ast.Load())


def _self_call(method: str, *args) -> ast.Expr:
    return ast.Expr(attr_call(name("self"), method, *args))


def _strs(xs) -> ast.Tuple:
    return tuple_of(const(x) for x in xs)


def _method_name(event) -> str:
    return "on_system_ready" if event.kind == "ready" else f"on_batch_{event.relation}"


class _Gen:
    def __init__(self, prog: DistProgram, passes=None, options=None, blocks_mode: str = "python"):
        self.prog = prog
        self.blocks_mode = blocks_mode
        self.maps = prog.tags()
        self.functions = []
        # every statement block through the shared lowering, in program order (by identity:
        # equal blocks of two triggers read different delta maps)
        passes = block_passes(BLOCK_PASSES) if passes is None else passes
        options = options or Options(mode="batch")
        self.lowered: dict[int, BlockCode] = {}
        for trig in prog.triggers:
            for b in trig.blocks:
                if b.mode != "exchange":
                    fname = f"{b.mode}_block_{len(self.lowered) + 1}"
                    self.lowered[id(b)] = lower_block(prog, trig.event.relation, b, fname, passes, options)

    def block_calls(self, block) -> list:
        if block.mode == "exchange":
            out = []
            for ex in block.items:
                if ex.kind == "gather":
                    out.append(_self_call("gather", const(ex.target), const(ex.source)))
                else:
                    out.append(_self_call(ex.kind, const(ex.target), const(ex.source), tuple_of(map(const, ex.parts))))
            return out
        code = self.lowered[id(block)]
        fname, params, fresh, written = code.name, list(code.params), list(code.fresh), list(code.written)
        scratch = [assign(map_param(t), ast.Dict([], [])) for t in code.scratch]
        doc = "\n    ".join(print_stmts(code.body, maps={m.name: m for m in code.imp.maps}))
        if block.mode == "local":
            fn = block_function(fname, params + fresh, scratch, code.body, None, code.scratch, doc)
            self.functions.append(fn)
            setup = [ast.Assign([ast.Subscript(_self_attr("local"), const(t), ast.Store())], ast.Dict([], []))
                     for t in fresh]
            return setup + [ast.Expr(call(fname, *(_self_map("local", p) for p in params + fresh)))]
        prologue = [assign(map_param(t), ast.Dict([], [])) for t in fresh] + scratch
        fn = block_function(fname, params, prologue, code.body, written, code.scratch, doc)
        self.functions.append(fn)
        return [_self_call("run_dist", name(fname), _strs(params), _strs(written))]

    def trigger_method(self, trig) -> ast.FunctionDef:
        rel = trig.event.relation
        delta = delta_map_name(rel)
        body = [_self_call("begin_trigger", const(delta), name("delta"))]
        temps = [delta]
        for b in trig.blocks:
            calls = self.block_calls(b)
            body += self.local_call(b, calls) if b.mode == "local" else calls
            for it in b.items:
                t = it.target if isinstance(it, Exchange) else it.stmt.target
                if self.maps[t].kind == "temp":
                    temps.append(t)
        body.append(_self_call("end_trigger", _strs(dict.fromkeys(temps))))
        args = ast.arguments(posonlyargs=[], args=[ast.arg("self"), ast.arg("delta")], vararg=None,
                             kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        return ast.FunctionDef(_method_name(trig.event), args, body, [], None, type_params=[])

    def local_call(self, block, calls: list) -> list:
        """A local block's calls wrapped in a closure handed to `self.run_local` with the maps it
        reads and writes: the runtime runs it at once, or after the batch's job when it reads a
        Gather's result or must stay after a block that does (so a batch stays one job)."""
        self.local_calls = getattr(self, "local_calls", 0) + 1
        fname = f"_local_{self.local_calls}"
        reads, writes = set(), []
        for it in block.items:
            reads |= map_names(it.stmt.rhs)
            writes.append(it.stmt.target)
        no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                kwarg=None, defaults=[])
        fn = ast.FunctionDef(fname, no_args, calls, [], None, type_params=[])
        return [fn, _self_call("run_local", name(fname), _strs(sorted(reads)), _strs(dict.fromkeys(writes)),
                               const(self.lowered[id(block)].name))]

    def module(self) -> ast.Module:
        prog = self.prog
        methods = [self.trigger_method(t) for t in prog.triggers]
        batch_triggers = [t for t in prog.triggers if t.event.kind == "batch"]
        views = [m for m in prog.maps if m.kind == "view"]
        logical = [m for m in views if not m.copy_of]     # the M3 program's views (checkpoints)
        local_maps = [m.name for m in views if isinstance(m.tag, Local)]
        dist_maps = {m.name: m.tag.parts if isinstance(m.tag, Dist) else () for m in views
                     if isinstance(m.tag, (Dist, Replicated))}      # () = replicated
        cls_body = [
            ast.Expr(const("Generated by toaster (dist_to_spark).")),
            ast.Assign([name("LOCAL_MAPS", ast.Store())], _strs(local_maps)),
            ast.Assign([name("DIST_MAPS", ast.Store())],
                       ast.Dict([const(k) for k in dist_maps], [tuple_of(map(const, v)) for v in dist_maps.values()])),
            ast.Assign([name("TRIGGERS", ast.Store())],
                       ast.Dict([const(t.event.relation) for t in batch_triggers],
                                [const(_method_name(t.event)) for t in batch_triggers])),
            ast.Assign([name("READY", ast.Store())],
                       const(next((_method_name(t.event) for t in prog.triggers if t.event.kind == "ready"), None))),
            ast.Assign([name("MAP_TYPES", ast.Store())],
                       ast.Dict([const(m.name) for m in logical],
                                [tuple_of([_strs(str(k.type) for k in m.keys), const(str(m.type))]) for m in logical])),
            ast.Assign([name("VIEW_COPIES", ast.Store())],
                       ast.Dict([const(m.name) for m in views if m.copy_of],
                                [const(m.copy_of) for m in views if m.copy_of])),
            ast.Assign([name("BLOCKS", ast.Store())], const(self.blocks_mode)),
            ast.Assign([name("SPREAD_BLOCKS", ast.Store())], _strs(spread_blocks(prog, self.lowered))),
            ast.Assign([name("RELATION_TYPES", ast.Store())],
                       ast.Dict([const(r.name) for r in prog.relations],
                                [_strs(str(c.type) for c in r.columns) for r in prog.relations])),
        ] + methods
        cls = ast.ClassDef("Program", [name("DistRuntime")], [], cls_body, [], type_params=[])
        main = ast.If(ast.Compare(name("__name__"), [ast.Eq()], [const("__main__")]),
                      [ast.Expr(call("run_main", name("Program")))], [])
        imports = ast.ImportFrom("toaster.backends.spark.runtime",
                                 [ast.alias("DistRuntime"), ast.alias("run_main")], 0)
        worker_imports = ast.ImportFrom("toaster.backends.spark.worker", [ast.alias(n) for n in ("ieee_div", "scalar_call", "scalar_cast", "index_of", "int64_overflow", "INT64_MIN", "INT64_MAX")], 0)
        how = ("Dist blocks run as native LLVM code in the executors (one partition program, JIT once "
               "per worker process; the dist_block_N functions below are its Python twin, not run)."
               if self.blocks_mode == "native" else "Dist blocks run as the Python functions below.")
        doc = ast.Expr(const("PySpark program generated by toaster from a distributed M3 program.\n" + how))
        mod = ast.Module([doc, imports, worker_imports] + self.functions + [cls, main], type_ignores=[])
        return ast.fix_missing_locations(mod)


def generate_module(prog: DistProgram, passes=None, options=None) -> ast.Module:
    return _generator(prog, passes, options).module()


def _generator(prog: DistProgram, passes, options, blocks_mode: str = "python") -> _Gen:
    if prog.stage != "blocks":
        raise ValueError("the PySpark generator reads blocks: run dist_blocks first")
    return _Gen(prog, passes, options, blocks_mode)


@register
@dataclass(frozen=True)
class DistToSpark(Pass):
    """Generate the PySpark driver program (source built with `ast`).

    block_passes: the passes that lower each statement block from M3 to the imperative IR
    (the local branch's, after its whole-program M3 rewrites).
    blocks: how the dist blocks run in the executors: 'native' (one LLVM partition program,
    native.py; what it cannot compile is an UnsupportedError here) or 'python' (pygen).
    executor_input: with native blocks, a trigger whose first block is a linear pre-aggregation
    of the batch runs it in the executors on their slice of the batch (native_input.py).
    driver_native: with native blocks, the driver's local blocks (a batch joined with Gathered
    views: TPC-H Q4, Q13, ...; the driver views' blocks: Q22) run in the driver's own JIT, over
    the batch's and the gathered maps' columns, the driver views resident there (native_driver.py)."""
    name = "dist_to_spark"
    takes = "dist"
    gives = "spark"
    description = "generate the PySpark driver program (source built with `ast`)"
    block_passes: tuple[str, ...] = BLOCK_PASSES
    blocks: str = "native"
    executor_input: bool = True      # native: the executors read their slice of a batch (native_input.py)
    driver_native: bool = True       # native: the driver's local blocks and views in its JIT (native_driver.py)

    def __post_init__(self):
        block_passes(self.block_passes)      # unknown names and wrong stages fail at once
        if self.blocks not in ("native", "python"):
            raise UnsupportedError(f"dist_to_spark.blocks must be native or python, not {self.blocks!r}")

    def run(self, prog: DistProgram, options: Options) -> SparkProgram:
        gen = _generator(prog, block_passes(self.block_passes), Options("batch", options.source_file, options.base_dir))
        lowered = tuple(gen.lowered.values())
        part = None
        if self.blocks == "native" and any(b.mode == "dist" for b in lowered):
            from toaster.backends.spark.native import partition_program
            from toaster.backends.spark.native_input import input_blocks
            inputs = input_blocks(prog, gen.lowered) if self.executor_input else {}
            part = partition_program(prog, lowered, inputs)
            if self.driver_native:      # the driver's own program: the executors do not compile its blocks
                part = _with_driver_program(prog, gen.lowered, inputs, part)
            else:
                part = replace(part, driver_python="dist_to_spark{driver_native=false}")
            gen.blocks_mode = "native"          # (no dist block: nothing runs in the executors)
        source = ast.unparse(gen.module()) + "\n"
        return SparkProgram(source, prog.relations, prog.queries, prog, lowered, part)


def _with_driver_program(prog: DistProgram, lowered: dict, inputs: dict, part):
    """The partition program with the driver's own (native_driver.py): its driver blocks, and
    its views resident there when every block touching them compiles; else those blocks stay
    the generated Python over IndexedMaps, the reason kept for --explain."""
    from toaster.backends.spark.native import partition_program
    from toaster.backends.spark.native_driver import driver_blocks, driver_views_refused, local_views
    refused = driver_views_refused(prog, local_views(prog))
    views = () if refused else local_views(prog)
    while True:
        driver, columnar = driver_blocks(prog, lowered, inputs, views)
        if not driver:
            return replace(part, driver_python=refused)
        try:
            own = partition_program(prog, tuple(lowered.values()), inputs, driver, columnar, dist_blocks=False)
        except UnsupportedError as e:
            if not views:
                raise
            views, refused = (), f"a block reading or writing a driver view does not compile natively: {e}"
            continue
        return replace(part, driver=driver, columnar=columnar, driver_program=own,
                       driver_views=views, driver_python=refused)


def dist_to_spark(prog: DistProgram, options=None, blocks: str = "native") -> SparkProgram:
    """The pass with its default options (the function earlier versions exported)."""
    return DistToSpark(blocks=blocks).run(prog, options or Options(mode="batch"))
