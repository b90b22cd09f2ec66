"""Backends as plugins: a name, the stage (and branch) whose IR it runs, and an engine factory.

    from toaster.backends import Backend, register_backend
    register_backend(Backend("mine", stage="imp", make=lambda imp_program, **kw: MyEngine(imp_program)))

`Compilation.engine(name)` compiles up to that stage through the pass manager and calls `make`;
`python -m toaster.pipeline Q.sql --run --backend NAME` uses the same registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from toaster.errors import UsageError


@dataclass(frozen=True)
class Backend:
    name: str
    stage: str                      # the stage whose IR the engine runs
    make: Callable                  # make(ir, **engine options) -> toaster.engine.Engine
    branch: str = "local"           # the pipeline branch that produces that stage
    default_mode: str = "tuple"     # trigger mode the CLI compiles for it unless --mode says otherwise
    description: str = ""
    # reads(ir) -> an object with relations_needed() and columns_needed(relation), as the
    # engine would answer them, without building the engine: `--run` then reads the input
    # while the engine is built (the LLVM JIT) in a thread
    reads: Callable | None = None


BACKENDS: dict[str, Backend] = {}


def register_backend(b: Backend, *, replace: bool = False) -> Backend:
    if b.name in BACKENDS and not replace:
        raise ValueError(f"a backend named {b.name!r} is already registered")
    BACKENDS[b.name] = b
    return b


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UsageError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})") from None


def _interp(m3, **kw):
    from toaster.backends.interp import InterpEngine
    return InterpEngine(m3, **kw)


def _calc(calc, **kw):
    from toaster.backends.calc import CalcEngine
    return CalcEngine(calc, **kw)


def _k3(k3, **kw):
    from toaster.k3.interpreter import K3Engine
    return K3Engine(k3, **kw)


def _imp(imp, **kw):
    from toaster.imperative.interpreter import ImpEngine
    return ImpEngine(imp, **kw)


def _llvm(llvm_module, **kw):
    from toaster.backends.llvm.engine import LLVMEngine
    return LLVMEngine(llvm_module, **kw)


def _spark(spark_program, **kw):
    from toaster.backends.spark.engine import SparkEngine
    return SparkEngine(spark_program, **kw)


register_backend(Backend("interp", "m3", _interp, description="M3 interpreter (the reference)"))
register_backend(Backend("calc", "calc", _calc,
                         description="re-evaluates the calculus definitions after each batch (no IVM)"))
register_backend(Backend("k3", "k3", _k3, description="interpreter of the K3 program (debugging)"))
register_backend(Backend("imp", "imp", _imp, description="interpreter of the imperative IR (debugging)"))
def _llvm_reads(llvm_module):
    from toaster.runtime.reads import ProgramReads
    return ProgramReads(llvm_module.program)


register_backend(Backend("llvm", "llvm", _llvm, description="native code JIT-compiled through LLVM",
                         reads=_llvm_reads))
register_backend(Backend("spark", "spark", _spark, branch="distributed", default_mode="batch",
                         description="generated PySpark program (distributed)"))
