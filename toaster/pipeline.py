"""The pipeline: named passes from SQL text to every backend, and the command line.

    python -m toaster.pipeline Q.sql --run [--backend interp|calc|llvm|spark]
    python -m toaster.pipeline Q.sql --dump-ir all

Local branch:        sql -> calc -> m3 -> k3 -> imp -> llvm
Distributed branch:  m3 (batch mode) -> dist -> spark
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass, field, replace

from toaster import passes as P
from toaster.errors import ToasterError, UnsupportedError
from toaster.passes import Options, get_pass, pass_

# ----------------------------------------------------------------- frontend passes


@dataclass(frozen=True)
class SqlStage:
    """The `sql` stage: the program text, its AST, and (after resolution) typed queries."""
    text: str
    program: object = None       # frontend.ast.SqlProgram
    queries: tuple | None = None  # tuple[ResolvedQuery]


@pass_("parse_sql", "sql", description="SQL text -> AST (lark grammar)")
def _parse_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.parser import parse_sql
    return replace(ir, program=parse_sql(ir.text, options.source_file, options.extra.get("base_dir")))


@pass_("resolve_sql", "sql", description="name resolution, types, result naming")
def _resolve_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.resolve import resolve_program
    return replace(ir, queries=resolve_program(ir.program))


@pass_("sql_to_calc", "sql", "calc", description="resolved SQL -> AGCA query maps")
def _sql_to_calc(ir: SqlStage, options: Options):
    from toaster.calculus.sql_results import sql_to_calc
    return sql_to_calc(ir.program.relations, ir.queries, getattr(ir.program, "functions", ()))


@pass_("simplify_calc", "calc", description="unification, partial evaluation, expansion of query maps")
def _simplify_calc(ir, options: Options):
    from toaster.calculus.ir import AggSum, mk_sum
    from toaster.calculus.simplify import simplify_monomials
    maps = []
    for m in ir.maps:
        body = m.definition.expr if isinstance(m.definition, AggSum) else m.definition
        monos = simplify_monomials(body, set(m.keys))
        maps.append(replace(m, definition=AggSum(m.keys, mk_sum([x.to_expr() for x in monos]))))
    return replace(ir, maps=tuple(maps))


@pass_("calc_to_m3", "calc", "m3", description="higher-order IVM compiler: deltas, materialization, triggers")
def _calc_to_m3(ir, options: Options):
    from toaster.m3.hoivm import compile_hoivm
    return compile_hoivm(ir, options.mode, options.strategy, options.depth)


FRONT = ["parse_sql", "resolve_sql", "sql_to_calc", "simplify_calc", "calc_to_m3"]
LOCAL_BACK = ["m3_to_k3", "k3_beta_reduce", "k3_fuse", "k3_to_imp", "imp_verify", "imp_to_llvm"]
DIST_BACK = ["m3_to_dist", "dist_simplify", "dist_blocks", "dist_to_spark"]

# modules that register the passes of later stages (imported on first use)
_PASS_MODULES = ["toaster.k3.from_m3", "toaster.k3.passes", "toaster.imperative.from_k3",
                 "toaster.imperative.passes", "toaster.backends.llvm.codegen",
                 "toaster.backends.spark"]


def load_pass_modules() -> None:
    for mod in _PASS_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            if e.name is None or not mod.startswith(e.name):
                raise


# -------------------------------------------------------------------- printing

def print_stage(stage: str, ir) -> str:
    match stage:
        case "sql":
            from toaster.frontend.printer import print_sql_program
            if ir.queries is None:
                return ir.text
            return print_sql_program(ir.program.relations, ir.queries)
        case "calc":
            from toaster.calculus.printer import print_calc_program
            return print_calc_program(ir)
        case "m3":
            from toaster.m3.printer import print_m3
            return print_m3(ir)
        case "k3":
            from toaster.k3.printer import print_k3
            return print_k3(ir)
        case "imp":
            from toaster.imperative.printer import print_imp
            return print_imp(ir)
        case "dist":
            from toaster.dist.printer import print_dist
            return print_dist(ir)
    return str(ir)


# ------------------------------------------------------------------ compilation

@dataclass
class Trace:
    pass_name: str
    stage: str
    text_fn: object   # () -> str, printed lazily


class Compilation:
    """One query file compiled through the pipeline; stages are computed on demand.

    `passes` (front + local) and `dist_passes` are lists of pass names; users may edit them
    (or pass skip/add) before the first stage is requested.
    """

    def __init__(self, text: str, *, mode: str = "tuple", source_file: str | None = None,
                 base_dir: str | None = None, skip=(), add=(), partitioning=None, master=None,
                 on_pass=None, strategy: str = "hoivm", depth: int | None = None):
        load_pass_modules()
        extra = {"base_dir": base_dir, "partitioning": partitioning or {}, "master": master}
        self.options = Options(mode=mode, source_file=source_file, extra=extra, strategy=strategy,
                               depth=depth)
        self.text = text
        self.skip = set(skip)
        for name in self.skip:
            get_pass(name)  # unknown names are an error
        self.passes = _with_added(FRONT + LOCAL_BACK, add, front=True)
        self.dist_passes = _with_added(DIST_BACK, add, front=False)
        self.ir: dict = {"sql": SqlStage(text)}
        self.trace: list[Trace] = []
        self.on_pass = on_pass
        self._done = 0
        self._dist_done = 0
        self._batch_m3 = None

    # -------------------------------------------------------------- running
    def stage(self, name: str):
        """The IR of a stage after every pass that produces it has run."""
        if name in ("dist", "spark"):
            return self._dist_stage(name)
        last = max((i for i, n in enumerate(self.passes) if get_pass(n).gives == name), default=None)
        if last is None and name not in self.ir:
            raise KeyError(f"no pass produces stage {name!r}")
        while last is not None and self._done <= last:
            self._run(self.passes[self._done], self.ir)
            self._done += 1
        if name not in self.ir:
            raise KeyError(f"stage {name!r} was not produced (were its passes skipped?)")
        return self.ir[name]

    def _run(self, pname: str, store: dict, options: Options | None = None) -> None:
        if pname in self.skip:
            return
        p = get_pass(pname)
        if p.takes not in store:
            raise UnsupportedError(f"pass {pname} needs stage {p.takes}, which is not available")
        out = p(store[p.takes], options or self.options)
        store[p.gives] = out
        self.trace.append(Trace(pname, p.gives, lambda s=p.gives, o=out: print_stage(s, o)))
        if self.on_pass is not None:
            self.on_pass(pname, p.gives, out)

    def _dist_stage(self, name: str):
        if self._batch_m3 is None:
            if self.options.mode == "batch":
                m3 = self.stage("m3")
            else:
                sub = Compilation(self.text, mode="batch", source_file=self.options.source_file,
                                  base_dir=self.options.extra.get("base_dir"), skip=self.skip,
                                  strategy=self.options.strategy, depth=self.options.depth)
                m3 = sub.stage("m3")
            self._batch_m3 = m3
            self.ir["m3:batch"] = m3
            self._dist_store = {"m3": m3}
        while name not in self._dist_store:
            if self._dist_done >= len(self.dist_passes):
                raise KeyError(f"no pass produces stage {name!r}")
            self._run(self.dist_passes[self._dist_done], self._dist_store,
                      replace(self.options, mode="batch"))
            self._dist_done += 1
        self.ir[name] = self._dist_store[name]
        return self._dist_store[name]

    def run_all(self, stages) -> None:
        for s in stages:
            self.stage(s)

    # ---------------------------------------------------------- conveniences
    @property
    def sql(self):
        return self.stage("sql")

    @property
    def calc(self):
        return self.stage("calc")

    @property
    def m3(self):
        return self.stage("m3")

    @property
    def k3(self):
        return self.stage("k3")

    @property
    def imp(self):
        return self.stage("imp")

    @property
    def queries(self) -> tuple:
        return self.stage("calc").queries

    @property
    def oracle_sql(self) -> tuple:
        """Per SELECT, a DuckDB query returning toaster's result columns (keys, then values)."""
        from toaster.frontend.printer import oracle_sql
        self.stage("calc")
        return tuple(oracle_sql(q) for q in self.ir["sql"].queries)

    def engine(self, backend: str = "interp"):
        match backend:
            case "interp":
                from toaster.backends.interp import InterpEngine
                return InterpEngine(self.m3)
            case "calc":
                from toaster.backends.calc import CalcEngine
                return CalcEngine(self.calc)
            case "imp":
                from toaster.imperative.interpreter import ImpEngine
                return ImpEngine(self.stage("imp"))
            case "llvm":
                from toaster.backends.llvm.engine import LLVMEngine
                return LLVMEngine(self.stage("llvm"))
            case "spark":
                from toaster.backends.spark.engine import SparkEngine
                return SparkEngine(self.stage("spark"), master=self.options.extra.get("master"))
        raise UnsupportedError(f"backend {backend!r} (known: interp, calc, imp, llvm, spark)")


def _with_added(names: list, add, front: bool) -> list:
    """Insert user passes: each item is a pass name or (name, after) pair."""
    out = list(names)
    for item in add:
        name, after = (item, None) if isinstance(item, str) else item
        p = get_pass(name)
        in_dist = p.takes in ("dist", "spark")
        if in_dist == front:
            continue
        if after is None:
            # after the last pass that produces the stage it reads
            idx = max((i for i, n in enumerate(out) if get_pass(n).gives == p.takes), default=-1)
        else:
            if after not in out:
                if (after in FRONT + LOCAL_BACK) != front:
                    continue
                raise KeyError(f"cannot insert {name} after {after}: no such pass in the pipeline")
            idx = out.index(after)
        out.insert(idx + 1, name)
    return out


def compile_sql(text: str, mode: str = "tuple", source_file: str | None = None, **kw) -> Compilation:
    """Compile a query program; stages are produced when first asked for."""
    c = Compilation(text, mode=mode, source_file=source_file, **kw)
    c.stage("calc")  # surface frontend errors right away
    return c


def compile_file(path: str, **kw) -> Compilation:
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ToasterError(f"cannot read {path}: {e.strerror}", file=path) from None
    return compile_sql(text, source_file=path, **kw)


# ------------------------------------------------------------------------ CLI

ALL_STAGES = ["sql", "calc", "m3", "k3", "imp", "llvm", "dist", "spark"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m toaster.pipeline",
                                 description="Compile SQL views into incremental trigger programs and run them.")
    ap.add_argument("query", nargs="?", help="SQL query file")
    ap.add_argument("--run", action="store_true", help="read the sources, feed the streams, print the views")
    ap.add_argument("--backend", default="interp", choices=["interp", "calc", "imp", "llvm", "spark"])
    ap.add_argument("--mode", choices=["tuple", "batch"], default=None,
                    help="single-tuple triggers or batch triggers (default: tuple; batch for spark)")
    ap.add_argument("--strategy", choices=["hoivm", "ivm", "rep", "naive"], default="hoivm",
                    help="maintenance strategy: higher-order IVM (default), first-order IVM, "
                         "re-evaluation, or the naive viewlet transform")
    ap.add_argument("--depth", type=int, default=None, help="highest delta order given its own maps")
    ap.add_argument("--explain", action="store_true",
                    help="summarize maps, triggers and the compiler's decisions; DOT graph with --dot FILE")
    ap.add_argument("--dot", metavar="FILE", help="write the view dependency graph as Graphviz DOT")
    ap.add_argument("--output", choices=["table", "csv", "json"], default="table")
    ap.add_argument("--dump-ir", metavar="STAGE[,STAGE...]|all", help="print the IR after these stages")
    ap.add_argument("--dump-dir", metavar="DIR", help="write one numbered file per pass into DIR")
    ap.add_argument("--list-passes", action="store_true", help="list registered passes and the pipeline")
    ap.add_argument("--skip-pass", action="append", default=[], metavar="NAME")
    ap.add_argument("--add-pass", action="append", default=[], metavar="MODULE:NAME[@AFTER]",
                    help="import MODULE (which registers pass NAME) and insert it after pass AFTER")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="stream rows per batch for --run (default: a whole file per batch)")
    ap.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    ap.add_argument("--base-dir", default=None, help="resolve relative FROM FILE / INCLUDE paths here")
    return ap


def _parse_add(specs) -> list:
    out = []
    for spec in specs:
        mod, _, rest = spec.partition(":")
        if not rest:
            mod, rest = None, spec
        name, _, after = rest.partition("@")
        if mod:
            importlib.import_module(mod)
        out.append((name, after or None))
    return out


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _main(args)
    except ToasterError as e:
        print(str(e), file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2


def _main(args) -> int:
    load_pass_modules()
    if args.list_passes:
        add = _parse_add(args.add_pass)
        print("registered passes:")
        for name in sorted(P.REGISTRY):
            p = P.REGISTRY[name]
            print(f"  {name:18s} {p.takes:>5s} -> {p.gives:<5s}  {p.description}")
        print("local pipeline:       " + " ".join(_with_added(FRONT + LOCAL_BACK, add, True)))
        print("distributed pipeline: " + " ".join(_with_added(DIST_BACK, add, False)))
        return 0
    if not args.query:
        raise ToasterError("no query file given")
    mode = args.mode or ("batch" if args.backend == "spark" else "tuple")
    comp = compile_file(args.query, mode=mode, base_dir=args.base_dir, skip=args.skip_pass,
                        add=_parse_add(args.add_pass), master=args.master, strategy=args.strategy,
                        depth=args.depth)
    if args.explain or args.dot:
        from toaster.m3.explain import explain, to_dot
        if args.explain:
            print(explain(comp.m3))
        if args.dot:
            with open(args.dot, "w") as f:
                f.write(to_dot(comp.m3))
    if args.dump_ir or args.dump_dir:
        stages = ALL_STAGES if (args.dump_ir in (None, "all")) else [s.strip() for s in args.dump_ir.split(",")]
        for s in stages:
            if s not in ALL_STAGES:
                raise ToasterError(f"unknown stage {s!r} (stages: {', '.join(ALL_STAGES)})")
        comp.run_all(stages)
        if args.dump_ir:
            for s in stages:
                print(f"==== {s} " + ("(from the batch-mode M3 program) " if s in ("dist", "spark") and mode != "batch" else "") + "=" * 40)
                print(print_stage(s, comp.ir[s]).rstrip("\n"))
        if args.dump_dir:
            os.makedirs(args.dump_dir, exist_ok=True)
            for i, t in enumerate(comp.trace, start=1):
                with open(os.path.join(args.dump_dir, f"{i:02d}-{t.pass_name}.{t.stage}.txt"), "w") as f:
                    f.write(t.text_fn())
    if args.run:
        from toaster.runtime.csv_source import load_sources
        from toaster.runtime.output import format_results
        engine = comp.engine(args.backend)
        try:
            tables, streams = load_sources(comp.m3.relations, batch_size=args.batch_size,
                                           base_dir=args.base_dir)
            for b in tables:
                engine.apply(b)
            for b in streams:
                engine.apply(b)
            out = format_results(engine.results(), args.output)
        finally:
            engine.close()
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
