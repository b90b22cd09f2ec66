"""Memoized reads of a native range index (range_index.py): an interval or a descent whose index
(group) was not written since the same read with the same arguments returns that read's answer.

MST reads, per event, 4 descents and ~20 per-broker intervals (`rix_interval(IDX, lo, hi,
broker)`), but an ASKS event writes no bid-side index and a BIDS event the indexes of one broker
only: most reads repeat the previous event's with the same bounds over the same nodes. Each masked
index (range_mask.py: written only by its level loops) keeps its last interval read per group and
its last ungrouped descent:

* ungrouped index (K = 2): globals `rix.memo.<IDX>.{iok,ilo,ihi,ival}` (interval) and
  `{bok,bcode,ba,bres}` (descent; `a` compared by its bits);
* grouped index (K > 2): temp maps `<IDX>.memo.{ok,lo,hi,val}[g..]` (one-key maps of small
  broker ids are direct tables: a hit is a few loads).

A level loop writing group g clears ok[g] (K = 2: both ok globals), before any level moves; the
rollback's rebuild and `rix.unmask` (before raw entries are read or loaded) clear every memo. An
answer is reused only over the same node values and arguments, so it is bit for bit the answer
the read would compute (float sums included). Descents of grouped indexes and `rix_sum` (the
fallback's per-key sums, whose arguments differ at each call) are not memoized.

`TOASTER_RIX_MEMO=off` emits the plain reads (A/B); the IR text differs, so the machine-code
cache keeps both.
"""
from __future__ import annotations

import os

from llvmlite import ir

from toaster.backends.llvm.hashmap import F64, I64, NativeMap, i64
from toaster.imperative.ir import MapSpec
from toaster.types import INT

MEMO_ENV = "TOASTER_RIX_MEMO"
_INTERVAL = ("iok", "ilo", "ihi", "ival")
_BOUND = ("bok", "bcode", "ba", "bres")


def memo_enabled() -> bool:
    choice = os.environ.get(MEMO_ENV, "on").strip().lower()
    if choice not in ("on", "off"):
        from toaster.errors import UsageError
        raise UsageError(f"{MEMO_ENV} must be 'on' or 'off', not {choice!r}")
    return choice == "on"


def _global(module, name, ty):
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, 0.0 if ty == F64 else 0)
    return g


def install_memo(module, maps: dict, m) -> None:
    """m.rix_memo: a dict of the memo's globals (K = 2) or maps (K > 2; added to `maps`, so they
    are created, freed and compacted with the others), None when memoizing is off."""
    m.rix_memo = None
    if not memo_enabled():
        return
    if m.K == 2:
        memo = {}
        for field in _INTERVAL + _BOUND:
            ty = m.vty if field == "ival" else I64
            memo[field] = _global(module, f"rix.memo.{m.name}.{field}", ty)
    else:
        groups = m.spec.key_types[:m.K - 2]
        memo = {}
        for field in ("ok", "lo", "hi", "val"):
            spec = MapSpec(f"{m.name}.memo.{field}", groups, m.spec.value_type if field == "val" else INT, "temp")
            memo[field] = maps[spec.name] = NativeMap(module, m.rt, spec)
    m.rix_memo = memo


def invalidate(b, m, gs) -> None:
    """Group gs of m is about to be written: its memo no longer holds."""
    memo = getattr(m, "rix_memo", None)
    if memo is None:
        return
    if m.K == 2:
        b.store(i64(0), memo["iok"])
        b.store(i64(0), memo["bok"])
    else:
        b.call(memo["ok"].set_fn, list(gs) + [i64(0)])


def invalidate_all(b, m) -> None:
    memo = getattr(m, "rix_memo", None)
    if memo is None:
        return
    if m.K == 2:
        b.store(i64(0), memo["iok"])
        b.store(i64(0), memo["bok"])
    else:
        b.call(memo["ok"].clear_fn, [])


def build_interval_memo(m, interval_fn):
    """rix.imemo.M(lo, hi, groups..): rix.interval.M's answer, the last one's when its group is
    unwritten since and lo, hi are the same."""
    memo = m.rix_memo
    groups = m.K - 2
    f = ir.Function(m.module, ir.FunctionType(m.vty, [I64, I64] + [I64] * groups), f"rix.imemo.{m.name}")
    f.linkage = "internal"
    lo, hi, gs = f.args[0], f.args[1], list(f.args[2:])
    entry, check, hit, miss = (f.append_basic_block(n) for n in ("entry", "check", "hit", "miss"))
    b = ir.IRBuilder(entry)
    if groups == 0:
        def load(field):
            return b.load(memo[field], typ=m.vty if field == "ival" else I64)
        ok_name, fields = "iok", ("ilo", "ihi", "ival")
    else:
        def load(field):
            return b.call(memo[field].get_fn, gs)
        ok_name, fields = "ok", ("lo", "hi", "val")
    b.cbranch(b.icmp_unsigned("!=", load(ok_name), i64(0)), check, miss)
    b = ir.IRBuilder(check)
    same = b.and_(b.icmp_signed("==", load(fields[0]), lo), b.icmp_signed("==", load(fields[1]), hi))
    b.cbranch(same, hit, miss)
    b = ir.IRBuilder(hit)
    b.ret(load(fields[2]))
    b = ir.IRBuilder(miss)
    v = b.call(interval_fn, [lo, hi] + gs)
    if groups == 0:
        for field, x in zip(("ilo", "ihi", "ival", "iok"), (lo, hi, v, i64(1))):
            b.store(x, memo[field])
    else:
        for field, x in zip(("lo", "hi", "val", "ok"), (lo, hi, v, i64(1))):
            b.call(memo[field].set_fn, gs + [x])
    b.ret(v)
    return f


def build_bound_memo(m, bound_fn):
    """rix.bmemo.M(code, a): rix.bound.M's answer, the last one's when the index is unwritten
    since and code and a's bits are the same (ungrouped indexes only)."""
    memo = m.rix_memo
    f = ir.Function(m.module, ir.FunctionType(I64, [I64, F64]), f"rix.bmemo.{m.name}")
    f.linkage = "internal"
    code, a = f.args
    entry, check, hit, miss = (f.append_basic_block(n) for n in ("entry", "check", "hit", "miss"))
    b = ir.IRBuilder(entry)
    bits = b.bitcast(a, I64)
    b.cbranch(b.icmp_unsigned("!=", b.load(memo["bok"], typ=I64), i64(0)), check, miss)
    c = ir.IRBuilder(check)
    same = c.and_(c.icmp_signed("==", c.load(memo["bcode"], typ=I64), code),
                  c.icmp_signed("==", c.load(memo["ba"], typ=I64), bits))
    c.cbranch(same, hit, miss)
    h = ir.IRBuilder(hit)
    h.ret(h.load(memo["bres"], typ=I64))
    s = ir.IRBuilder(miss)
    r = s.call(bound_fn, [code, a])
    for field, x in zip(("bcode", "ba", "bres", "bok"), (code, bits, r, i64(1))):
        s.store(x, memo[field])
    s.ret(r)
    return f
