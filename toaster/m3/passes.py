"""The lowering `calc_to_m3`: the higher-order IVM compiler as a pass with typed options."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toaster.passes import Options, Pass, register


@register
@dataclass(frozen=True)
class CalcToM3(Pass):
    """Higher-order IVM compiler: deltas, materialization, triggers (see toaster/m3/hoivm.py).

    strategy: hoivm (DBToaster's viewlet transform), ivm (first-order deltas over base-relation
    maps), rep (re-evaluation from base-relation maps), naive (no decomposition);
    depth: highest delta order given its own maps (none: unbounded).
    """
    name = "calc_to_m3"
    takes = "calc"
    gives = "m3"
    description = "higher-order IVM compiler: deltas, materialization, triggers"
    strategy: Literal["hoivm", "ivm", "rep", "naive"] = "hoivm"
    depth: int | None = None

    def run(self, ir, options: Options):
        from toaster.m3.hoivm import compile_hoivm
        return compile_hoivm(ir, options.mode, self.strategy, self.depth)
