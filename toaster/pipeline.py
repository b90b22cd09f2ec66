"""The pipelines, as data, and `Compilation`: one query program taken through them on demand.

    python -m toaster.pipeline Q.sql --run [--backend interp|calc|imp|llvm|spark]
    python -m toaster.pipeline Q.sql --dump-ir all

Front end (shared):  parse_sql resolve_sql nonfinite_sums sql_to_calc simplify_calc calc_to_m3
Local branch:        m3_range_index m3_view_cache m3_batch_delta m3_factorize m3_to_k3 k3_fuse k3_cse k3_to_imp imp_guard_loops imp_scalar_copies imp_accumulate_loops imp_fuse_loops imp_verify imp_to_llvm
Distributed branch:  m3_to_dist dist_simplify dist_blocks dist_fuse dist_to_spark  (batch-mode M3)

Each branch is the front end followed by the branch's passes; the distributed branch always
compiles the front end in batch mode, sharing it with the local branch when that one is in batch
mode too. Every pass of every branch runs through one `PassManager` per branch, so dumps, added
and skipped passes, options and timings see all of it. The command line is `toaster.cli`.
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass

from toaster.errors import InternalError, ToasterError, UsageError
from toaster.passes import Options, Pass, PassManager, PassRecord, get_pass, parse_spec


@dataclass(frozen=True)
class Branch:
    name: str
    passes: tuple          # pass specs after the front end
    mode: str | None = None  # the trigger mode this branch forces (None: the compilation's)
    description: str = ""


FRONT = ("parse_sql", "resolve_sql", "nonfinite_sums", "sql_to_calc", "simplify_calc", "calc_to_m3")
BRANCHES = {
    "local": Branch("local", ("m3_range_index", "m3_view_cache", "m3_batch_delta", "m3_factorize", "m3_to_k3", "k3_fuse", "k3_cse", "k3_to_imp", "imp_guard_loops",
                              "imp_scalar_copies", "imp_accumulate_loops", "imp_fuse_loops", "imp_verify",
                              "imp_to_llvm"),
                    description="M3 -> K3 -> imperative IR -> LLVM IR (JIT-compiled native code)"),
    "distributed": Branch("distributed", ("m3_to_dist", "dist_simplify", "dist_blocks", "dist_fuse",
                                          "dist_to_spark"), mode="batch",
                          description="batch-mode M3 -> distributed M3 -> PySpark program"),
}
ALL_STAGES = ["sql", "calc", "m3", "k3", "imp", "llvm", "dist", "spark"]
# printable views derived from a stage (not stages of their own: no pass gives them)
VIEWS = {"plan": "m3", "blocks": "spark"}   # blocks: each spark block's imperative code
# the branch that answers `--dump-ir STAGE` for a stage both branches produce
_HOME = {"sql": "local", "calc": "local", "m3": "local", "k3": "local", "imp": "local", "llvm": "local",
         "dist": "distributed", "spark": "distributed"}
# where a compilation can start, by file suffix (DBToaster starts from any IR it parses)
SUFFIX_STAGES = {".sql": "sql", ".m3": "m3", ".k3": "k3", ".imp": "imp"}

# modules that register the passes of every stage (imported once, on first use): those of the
# front end and the local branch, then those only the distributed branch needs (~0.05 s of
# imports a local compilation does without: Compilation builds that branch when first asked)
_LOCAL_PASS_MODULES = ["toaster.frontend.passes", "toaster.calculus.passes", "toaster.m3.passes", "toaster.m3.batch_delta",
                       "toaster.m3.view_cache", "toaster.m3.range_index", "toaster.m3.factorize", "toaster.k3.from_m3", "toaster.k3.passes", "toaster.imperative.from_k3",
                       "toaster.imperative.guard", "toaster.imperative.scalar_copies", "toaster.imperative.accumulate", "toaster.imperative.fuse_loops", "toaster.imperative.passes", "toaster.backends.llvm.codegen"]
_DIST_PASS_MODULES = ["toaster.dist.placement", "toaster.dist.simplify", "toaster.dist.blocks", "toaster.backends.spark.codegen"]
_PASS_MODULES = _LOCAL_PASS_MODULES + _DIST_PASS_MODULES


def load_pass_modules(local_only: bool = False) -> None:
    for mod in _LOCAL_PASS_MODULES if local_only else _PASS_MODULES:
        importlib.import_module(mod)


# -------------------------------------------------------------------- printing and parsing

def print_stage(stage: str, ir) -> str:
    """The canonical text of a stage's IR (what `--dump-ir` prints)."""
    match stage:
        case "plan":
            from toaster.m3.plan import materialization_plan, print_plan
            return print_plan(materialization_plan(ir))
        case "sql":
            from toaster.frontend.passes import print_sql_stage
            return print_sql_stage(ir)
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
        case "blocks":
            return "\n".join(str(b) for b in ir.blocks)
    return str(ir)


def parse_stage(stage: str, text: str, file: str | None = None):
    """Text of a stage -> its IR (a compilation may start from .m3, .k3 or .imp files)."""
    match stage:
        case "sql":
            from toaster.frontend.passes import SqlStage
            return SqlStage(text)
        case "m3":
            from toaster.m3.parser import parse_m3
            return _located(parse_m3, text, file)
        case "k3":
            from toaster.k3.parser import parse_k3
            return _located(parse_k3, text, file)
        case "imp":
            from toaster.imperative.parser import parse_imp
            return _located(parse_imp, text, file)
    raise UsageError(f"cannot start a compilation from stage {stage!r}")


def _located(parse, text, file):
    try:
        return parse(text, file) if file is not None else parse(text)
    except TypeError:
        return parse(text)
    except ToasterError as e:
        raise e.located(file)


# ------------------------------------------------------------------------ compilation

class Compilation:
    """One program compiled through the pipelines; a stage is computed when first asked for.

    skip:          names of optional passes to leave out (a pass that cannot be skipped says so)
    add:           (spec, after) pairs: insert a registered pass after the pass `after` (or, when
                   None, after the last pass producing the stage it reads), in every branch
    pass_options:  {pass name: {option: value}} applied to that pass wherever it runs
    on_pass:       callback(record: PassRecord) after every pass
    print_before:  callback(pass, ir) before every pass (the CLI's --print-before)
    start:         the stage `text` is written in ('sql' by default; 'm3', 'k3', 'imp')
    """

    def __init__(self, text: str, *, mode: str = "tuple", source_file: str | None = None,
                 base_dir: str | None = None, skip=(), add=(), pass_options=None, partitioning=None,
                 on_pass=None, print_before=None, strategy: str = "hoivm", depth: int | None = None,
                 start: str = "sql", master: str | None = None):
        # a compilation that changes no pipeline builds the distributed one when first asked
        lazy = not (skip or add or pass_options or partitioning or strategy != "hoivm" or depth is not None)
        load_pass_modules(local_only=lazy)
        if mode not in ("tuple", "batch"):
            raise UsageError(f"mode must be 'tuple' or 'batch', not {mode!r}")
        self.text = text
        self.start = start
        self.master = master
        start_ir = parse_stage(start, text, source_file)
        if start == "m3":
            mode = start_ir.mode
        self.options = Options(mode=mode, source_file=source_file, base_dir=base_dir)
        opts = {k: dict(v) for k, v in (pass_options or {}).items()}
        if strategy != "hoivm":
            opts.setdefault("calc_to_m3", {}).setdefault("strategy", strategy)
        if depth is not None:
            opts.setdefault("calc_to_m3", {}).setdefault("depth", depth)
        if partitioning:
            from toaster.dist.placement import partitioning_items
            opts.setdefault("m3_to_dist", {}).setdefault("partitioning", partitioning_items(partitioning))
        self.trace: list[PassRecord] = []
        self._pipelines, self._managers, self._stores = {}, {}, {}
        memo: dict = {}
        hooks = [self.trace.append] + ([on_pass] if on_pass else [])
        before = [print_before] if print_before else []

        def build(names):
            for name, passes in self._build_pipelines(skip, add, opts, names).items():
                bmode = BRANCHES[name].mode or mode
                self._pipelines[name] = passes
                self._managers[name] = PassManager(passes, Options(bmode, source_file, base_dir), branch=name,
                                                   hooks=hooks, before=before, memo=memo, source=text)
                self._stores[name] = {start: start_ir}
        self._build = build
        build(["local"] if lazy else list(BRANCHES))
        self.ir = self._stores["local"]

    def _branch(self, name: str) -> None:
        """Build branch `name` if it is not yet (with every pass module imported)."""
        if name not in self._managers and name in BRANCHES:
            load_pass_modules()
            self._build([name])

    def _all_branches(self) -> None:
        for name in BRANCHES:
            self._branch(name)

    # every branch, in BRANCHES order, for callers that look at them all
    @property
    def pipelines(self) -> dict:
        self._all_branches()
        return {name: self._pipelines[name] for name in BRANCHES}

    @property
    def managers(self) -> dict:
        self._all_branches()
        return {name: self._managers[name] for name in BRANCHES}

    @property
    def stores(self) -> dict:
        self._all_branches()
        return {name: self._stores[name] for name in BRANCHES}

    # ------------------------------------------------------------ building pipelines
    def _build_pipelines(self, skip, add, opts, names) -> dict:
        pipelines = {}
        for name, branch in BRANCHES.items():
            if name not in names:
                continue
            specs = list(FRONT) + list(branch.passes)
            passes = [get_pass(s) for s in specs]
            # a compilation that starts later (an .m3 file) drops the passes before its stage
            first = next((i for i, p in enumerate(passes) if p.takes == self.start), None)
            passes = passes[first:] if first is not None else []
            pipelines[name] = passes
        for spec, after in add:
            new = parse_spec(spec)
            placed = False
            for name, passes in pipelines.items():
                if after is not None:
                    idx = next((i for i, p in enumerate(passes) if p.name == after), None)
                else:
                    idx = max((i for i, p in enumerate(passes) if p.gives == new[0].takes), default=None)
                if idx is not None:
                    passes[idx + 1:idx + 1] = new
                    placed = True
            if not placed:
                where = f"after {after}" if after else f"after a pass that gives stage {new[0].takes}"
                raise UsageError(f"cannot add pass {new[0].name} {where}: no such pass in any pipeline")
        in_any = {p.name for ps in pipelines.values() for p in ps}
        for name in skip:
            cls = get_pass(name)
            if name not in in_any:
                raise UsageError(f"cannot skip pass {name}: it is not in the pipeline")
            if not cls.can_skip():
                why = cls.why_required or f"it is a lowering ({cls.takes} -> {cls.gives})"
                raise UsageError(f"pass {name} cannot be skipped: {why}")
            for ps in pipelines.values():
                ps[:] = [p for p in ps if p.name != name]
        for pname, values in opts.items():
            get_pass(pname)
            if pname not in in_any:
                raise UsageError(f"option for pass {pname}, which is not in the pipeline")
            for ps in pipelines.values():
                ps[:] = [p.with_options(**values) if p.name == pname else p for p in ps]
        return pipelines

    # ------------------------------------------------------------------- running
    def stage(self, name: str, branch: str | None = None):
        """The IR of a stage: the output of the last pass of the branch that gives it."""
        branch = branch or _HOME.get(name, "local")
        self._branch(branch)
        if branch not in self._managers:
            raise UsageError(f"unknown branch {branch!r} (branches: {', '.join(BRANCHES)})")
        pm, store = self._managers[branch], self._stores[branch]
        last = pm.last_producer(name)
        if last is None and name not in store:
            if name in ALL_STAGES and self.start in ALL_STAGES and \
                    ALL_STAGES.index(name) < ALL_STAGES.index(self.start):
                raise UsageError(f"this compilation starts at stage {self.start}, after stage {name}: "
                                 f"use a backend that runs stage {self.start} or a later one")
            raise UsageError(f"no pass of the {branch} pipeline produces stage {name!r}")
        if last is not None:
            pm.run(store, last)
        return store[name]

    def run_all(self, stages, branch: str | None = None) -> None:
        for s in stages:
            self.stage(s, branch)

    def pipeline_text(self) -> str:
        return "\n".join(f"{name} pipeline: " + " | ".join(p.spec() for p in ps)
                         for name, ps in self.pipelines.items())

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
        if self.start == "sql":
            return self.stage("calc").queries
        return self.stage(self.start).queries

    @property
    def oracle_sql(self) -> tuple:
        """Per SELECT, a DuckDB query returning toaster's result columns (keys, then values)."""
        from toaster.frontend.printer import oracle_sql
        self.stage("calc")
        sql = self.ir["sql"]
        return tuple(oracle_sql(q) for q in (sql.resolved or sql.queries))

    def engine(self, backend: str = "interp", **kw):
        """An engine of a registered backend (toaster.backends.BACKENDS) over the stage it runs."""
        from toaster.backends import get_backend
        b = get_backend(backend)
        if backend == "spark" and "master" not in kw:
            kw["master"] = self.master
        return b.make(self.stage(b.stage, b.branch), **kw)


def compile_sql(text: str, mode: str = "tuple", source_file: str | None = None, **kw) -> Compilation:
    """Compile a query program; stages are produced when first asked for."""
    c = Compilation(text, mode=mode, source_file=source_file, **kw)
    if c.start == "sql":
        c.stage("calc")  # surface frontend errors right away
    return c


def compile_file(path: str, **kw) -> Compilation:
    """Compile a file; its suffix says which stage it is written in (.sql, .m3, .k3, .imp)."""
    start = SUFFIX_STAGES.get(os.path.splitext(path)[1].lower(), "sql")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ToasterError(f"cannot read {path}: {e.strerror}", file=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise UsageError("the file is not valid UTF-8", file=path, line=line, column=col) from None
    return compile_sql(text, source_file=path, start=start, **kw)


def main(argv=None) -> int:
    from toaster.cli import main as cli_main
    return cli_main(argv)


if __name__ == "__main__":
    from toaster.cli import console_main
    console_main()
