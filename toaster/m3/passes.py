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
    depth: highest delta order given its own maps (none: unbounded);
    join_domains: a nested aggregate that an update reaches only through a join (an outer join
    whose padded side is a join, TPC-H Q20's PART) is maintained through a join domain instead
    of re-evaluated. Off by default: measured on Q20 (llvm, SF 0.1) it is slower than the
    re-evaluation it replaces (tuple 71.6 K -> 9.3 K ev/s, batch 1,000 1.84 M -> 1.1 M).
    """
    name = "calc_to_m3"
    takes = "calc"
    gives = "m3"
    description = "higher-order IVM compiler: deltas, materialization, triggers"
    strategy: Literal["hoivm", "ivm", "rep", "naive"] = "hoivm"
    depth: int | None = None
    join_domains: bool = False

    def run(self, ir, options: Options):
        from toaster.m3.hoivm import compile_hoivm
        return compile_hoivm(ir, options.mode, self.strategy, self.depth, self.join_domains)
