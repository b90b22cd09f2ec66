"""Named passes and lowerings, and the registry a pipeline is built from.

A pass reads the IR of one stage and produces the IR of a stage (the same one for an
optimization pass, the next one for a lowering). Passes are registered by name; a pipeline
is a list of names. Users add their own with `register_pass` (or the @pass_ decorator) and
insert it into a pipeline by name, from Python or with `--add-pass NAME[@AFTER]` on the CLI.

Stages: sql, calc, m3, k3, imp, llvm (local branch); dist, spark (distributed branch).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

STAGES = ("sql", "calc", "m3", "k3", "imp", "llvm", "dist", "spark")


@dataclass(frozen=True)
class Options:
    """Compilation options every pass may consult."""
    mode: str = "tuple"            # 'tuple' (single-tuple triggers) | 'batch' (batch triggers)
    strategy: str = "hoivm"        # 'hoivm' | 'ivm' | 'rep' | 'naive' (see calculus/hoivm.py)
    depth: int | None = None       # highest delta order materialized (None: unbounded)
    source_file: str | None = None
    extra: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Pass:
    name: str
    takes: str                       # stage read
    gives: str                       # stage written
    run: Callable                    # run(ir, options) -> ir
    description: str = ""

    def __call__(self, ir, options: Options | None = None):
        return self.run(ir, options or Options())


REGISTRY: dict[str, Pass] = {}


def register_pass(p: Pass, *, replace: bool = False) -> Pass:
    if p.takes not in STAGES or p.gives not in STAGES:
        raise ValueError(f"pass {p.name}: unknown stage {p.takes!r} -> {p.gives!r}")
    if p.name in REGISTRY and not replace and REGISTRY[p.name] is not p:
        raise ValueError(f"a pass named {p.name!r} is already registered")
    REGISTRY[p.name] = p
    return p


def pass_(name: str, takes: str, gives: str | None = None, description: str = ""):
    """Decorator: register `fn(ir, options) -> ir` as a pass."""
    def deco(fn):
        register_pass(Pass(name, takes, gives or takes, fn, description or (fn.__doc__ or "").strip().split("\n")[0]))
        return fn
    return deco


def get_pass(name: str) -> Pass:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown pass {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
