"""Checked 64-bit integer arithmetic in native code (one integer semantics on every engine).

Every integer `+ - *` the code generator emits for values (BinOp on INT/DATE operands, and the
value addition of an integer map's `add`) is `llvm.{sadd,ssub,smul}.with.overflow.i64`. On
overflow the code records the *site* -- the number of the map the value was being computed
for -- in the external global `overflow.site` (-1: none; the first site wins) and carries on
with the wrapped value; the batch is then rolled back by the undo log (undo.py), which such
programs always run with, and the engine raises IntegerOverflowError naming the map.
"""
from __future__ import annotations

from llvmlite import ir

from toaster.backends.llvm.hashmap import I64, i64

SYMBOL = "overflow.site"


class OverflowFlag:
    def __init__(self, module: ir.Module):
        self.site_global = ir.GlobalVariable(module, I64, SYMBOL)
        self.site_global.initializer = i64(-1)       # external: the engine reads and resets it
        self.sites: list[str] = []                   # site number -> map name

    def site(self, map_name: str) -> int:
        if map_name not in self.sites:
            self.sites.append(map_name)
        return self.sites.index(map_name)

    def arith(self, b: ir.IRBuilder, op: str, x, y, map_name: str):
        """x op y for op in + - * on i64, recording `map_name`'s site if it overflows."""
        fn = {"+": b.sadd_with_overflow, "-": b.ssub_with_overflow, "*": b.smul_with_overflow}[op]
        r = fn(x, y)
        with b.if_then(b.extract_value(r, 1), likely=False):
            cur = b.load(self.site_global, typ=I64)
            first = b.icmp_signed("==", cur, i64(-1))
            b.store(b.select(first, i64(self.site(map_name)), cur), self.site_global)
        return b.extract_value(r, 0)

    def failed(self, b: ir.IRBuilder):
        """i1: an overflow was recorded in this batch."""
        return b.icmp_signed("!=", b.load(self.site_global, typ=I64), i64(-1))
