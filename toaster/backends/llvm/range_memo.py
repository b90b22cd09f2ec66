"""Memoized reads of a native range index (range_index.py): an interval or a descent whose index
(group) was not written since the same read with the same arguments returns that read's answer.

MST reads, per event, 4 descents and ~20 per-broker intervals (`rix_interval(IDX, lo, hi,
broker)`), but an ASKS event writes no bid-side index and a BIDS event the indexes of one broker
only: most reads repeat the previous event's with the same bounds over the same nodes. Each masked
index (range_mask.py: written only by its level loops) keeps its last interval read per group and
its last ungrouped descent:

* ungrouped index (K = 2): globals `rix.memo.<IDX>.{iok,ilo,ihi,ival}` (interval) and
  `{bok,bcode,ba,bres}` (descent; `a` compared by its bits);
* grouped index (K > 2): the bounds of its last read and their epoch (globals `rix.memo.<IDX>.
  {elo,ehi,epoch}`: new bounds start a new epoch), and temp maps `<IDX>.memo.{stamp,val}[g..]`:
  group g's value, computed in epoch stamp[g] (one-key maps of small broker ids are direct
  tables: a hit is two loads). Every group of MST's index is read with the same bounds.

A level loop writing group g sets stamp[g] = 0 (no epoch; K = 2: clears both ok globals), before
any level moves; the rollback's rebuild and `rix.unmask` (before raw entries are read or loaded)
clear every memo. An
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
        memo = {field: _global(module, f"rix.memo.{m.name}.{field}", I64) for field in ("elo", "ehi", "epoch")}
        memo["epoch"].initializer = i64(1)      # stamp 0 (absent, written) is never an epoch
        for field in ("stamp", "val"):
            spec = MapSpec(f"{m.name}.memo.{field}", groups, m.spec.value_type if field == "val" else INT, "temp")
            memo[field] = maps[spec.name] = NativeMap(module, m.rt, spec)
    m.rix_memo = memo


def invalidate(b, m, gs) -> None:
    """Group gs of m is about to be written: its memo no longer holds."""
    _forget(b, m, lambda memo: b.call(memo["stamp"].set_fn, list(gs) + [i64(0)]))


def invalidate_all(b, m) -> None:
    _forget(b, m, lambda memo: b.call(memo["stamp"].clear_fn, []))


def _forget(b, m, grouped) -> None:
    """An ungrouped index forgets its interval and descent; a grouped one does `grouped(memo)`."""
    memo = getattr(m, "rix_memo", None)
    if memo is None:
        return
    if m.K == 2:
        b.store(i64(0), memo["iok"])
        b.store(i64(0), memo["bok"])
    else:
        grouped(memo)


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
        b.cbranch(b.icmp_unsigned("!=", b.load(memo["iok"], typ=I64), i64(0)), check, miss)
        c = ir.IRBuilder(check)
        same = c.and_(c.icmp_signed("==", c.load(memo["ilo"], typ=I64), lo),
                      c.icmp_signed("==", c.load(memo["ihi"], typ=I64), hi))
        c.cbranch(same, hit, miss)
        h = ir.IRBuilder(hit)
        h.ret(h.load(memo["ival"], typ=m.vty))
        s = ir.IRBuilder(miss)
        v = s.call(interval_fn, [lo, hi] + gs)
        for field, x in zip(("ilo", "ihi", "ival", "iok"), (lo, hi, v, i64(1))):
            s.store(x, memo[field])
        s.ret(v)
        return f
    # grouped: same bounds as the last read -> this epoch; else a new epoch (every stamp stale)
    new_epoch = f.append_basic_block("new_epoch")
    same = b.and_(b.icmp_signed("==", b.load(memo["elo"], typ=I64), lo),
                  b.icmp_signed("==", b.load(memo["ehi"], typ=I64), hi))
    b.cbranch(same, check, new_epoch)
    n = ir.IRBuilder(new_epoch)
    n.store(n.add(n.load(memo["epoch"], typ=I64), i64(1)), memo["epoch"])
    n.store(lo, memo["elo"])
    n.store(hi, memo["ehi"])
    n.branch(miss)
    c = ir.IRBuilder(check)
    stamp = c.call(memo["stamp"].get_fn, gs)
    c.cbranch(c.icmp_signed("==", stamp, c.load(memo["epoch"], typ=I64)), hit, miss)
    h = ir.IRBuilder(hit)
    h.ret(h.call(memo["val"].get_fn, gs))
    s = ir.IRBuilder(miss)
    v = s.call(interval_fn, [lo, hi] + gs)
    s.call(memo["stamp"].set_fn, gs + [s.load(memo["epoch"], typ=I64)])
    s.call(memo["val"].set_fn, gs + [v])
    s.ret(v)
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
