"""The per-trigger half of `imp_to_llvm` (codegen.py): one LLVM function body per ImpTrigger
(locals, expressions, map reads/writes, loops over slices), and the value conversions and key
encodings it shares with the module half and range_index.py. Value representation: see codegen.py."""
from __future__ import annotations

import operator

from llvmlite import ir

from toaster.functions import FUNCTIONS, call as call_builtin
from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear)
from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL
from toaster.backends.llvm.hashmap import NativeMap, I1, I8, I64, F64, PTR, i64
from toaster.backends.llvm.strings import StringTable, RANK
from toaster.backends.llvm.natives import float_to_int, native_call
from toaster.backends.llvm.range_index import masked_update
from toaster.backends.llvm.scan_sum import branch_free_sum
from toaster.m3.range_index import LEVELS_MAP
from toaster.runtime.int64 import blame_maps, imp_writes


ARITH = ("+", "-", "*", "/")
COMPARE = ("=", "!=", "<", "<=", ">", ">=")
PY_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
INT_LIKE = (INT, DATE)
BRANCH_FREE_SUMS = True    # scan_sum (A/B switch for bench)




def repr_type(t: Type):
    if t == FLOAT:
        return F64
    if t == BOOL:
        return I1
    return I64


def convert(b: ir.IRBuilder, v, src: Type, dst: Type):
    """Numeric conversion between runtime representations (Cast semantics)."""
    if src == dst or (src in INT_LIKE and dst in INT_LIKE):
        return v
    if dst == FLOAT:
        if src in INT_LIKE:
            return b.sitofp(v, F64)
        if src == BOOL:
            return b.uitofp(v, F64)
    if dst in INT_LIKE:
        if src == FLOAT:
            return float_to_int(b, v)   # toward zero, saturating, nan -> 0 (toaster.functions.cast)
        if src == BOOL:
            return b.zext(v, I64)
    if dst == BOOL:
        if src in INT_LIKE:
            return b.icmp_signed("!=", v, i64(0))
        if src == FLOAT:
            return b.fcmp_unordered("!=", v, ir.Constant(F64, 0.0))
    raise UnsupportedError(f"conversion from {src} to {dst} in the LLVM backend")


CANONICAL_NAN_BITS = 0x7FF8000000000000     # Python's float("nan")


def encode_key(b, v, t: Type):
    if t == FLOAT:
        zero = ir.Constant(F64, 0.0)
        v = b.select(b.fcmp_ordered("==", v, zero), zero, v)   # one key for 0.0 and -0.0
        bits = b.bitcast(v, I64)
        # one key for every NaN (0/0 and acos(2) differ in their sign bit), as DuckDB groups them
        return b.select(b.fcmp_unordered("uno", v, v), ir.Constant(I64, CANONICAL_NAN_BITS), bits)
    if t == BOOL:
        return b.zext(v, I64)
    return v


def decode_key(b, k, t: Type):
    if t == FLOAT:
        return b.bitcast(k, F64)
    if t == BOOL:
        return b.trunc(k, I1)
    return k


def _has_native_value(value, t: Type) -> bool:
    if t == STRING:
        return isinstance(value, str)
    if t == FLOAT:
        return isinstance(value, (int, float))
    return isinstance(value, int) and -2**63 <= value < 2**63


class _TriggerGen:
    """Emits one function body; keeps the lexical scopes of locals (allocas)."""

    def __init__(self, gen, fn: ir.Function, params):      # gen: codegen._ModuleGen
        self.g = gen
        self.fn = fn
        # allocas go to a block of their own (llvmlite builders insert by index, so allocas
        # added at the start of the block being built would shift the builder)
        self.entry = fn.append_basic_block("locals")
        self.alloca_b = ir.IRBuilder(self.entry)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.scopes = [{}]
        self.blame = fn.name        # the map an integer overflow here is reported for
        for p, a in zip(params, fn.args):
            self.bind(p, a)

    # ------------------------------------------------------------ locals
    def new_local(self, var: LocalRef):
        slot = self.alloca_b.alloca(repr_type(var.type), name=var.name)
        self.scopes[-1][var.name] = (slot, var.type)
        return slot

    def bind(self, var: LocalRef, value, src: Type | None = None):
        slot = self.new_local(var)
        self.b.store(convert(self.b, value, src or var.type, var.type), slot)

    def finish(self):
        self.b.ret_void()
        self.alloca_b.branch(self.fn.blocks[1])

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise ValueError(f"imp: local {name!r} used before its Declare")

    def body(self, stmts):
        """A trigger body: each top-level statement blames overflows outside map writes on the
        map it (or a later statement) writes, as the Python engines do (int64.blame_maps)."""
        self.scopes.append({})
        for s, blame in zip(stmts, blame_maps(stmts, imp_writes)):
            self.blame = blame or self.fn.name
            self.stmt(s)
        self.scopes.pop()

    def block(self, stmts):
        self.scopes.append({})
        for s in stmts:
            self.stmt(s)
        self.scopes.pop()

    # ------------------------------------------------------------ expressions
    def typed(self, e, dst: Type):
        return convert(self.b, self.expr(e), e.type, dst)

    def expr(self, e):
        b = self.b
        match e:
            case LocalRef(name, t):
                slot, vt = self.lookup(name)
                return convert(b, b.load(slot, typ=repr_type(vt)), vt, t)
            case Lit(v, t):
                return self.g.literal(v, t)
            case BinOp(op, l, r, t) if op in ARITH:
                if op == "/":
                    # '/' is FLOAT; x/0 follows IEEE (inf or nan)
                    return convert(b, b.fdiv(self.typed(l, FLOAT), self.typed(r, FLOAT)), FLOAT, t)
                wt = FLOAT if FLOAT in (t, l.type, r.type) else INT
                x, y = self.typed(l, wt), self.typed(r, wt)
                if wt == FLOAT:
                    v = {"+": b.fadd, "-": b.fsub, "*": b.fmul}[op](x, y)
                else:        # checked 64-bit arithmetic (overflow.py)
                    v = self.g.overflow.arith(b, op, x, y, self.blame)
                return convert(b, v, wt, t)
            case BinOp(op, l, r, t) if op in COMPARE:
                return convert(b, self.compare(op, l, r), BOOL, t)
            case BinOp(op, l, r, t) if op in ("and", "or"):
                x, y = self.typed(l, BOOL), self.typed(r, BOOL)
                return convert(b, b.and_(x, y) if op == "and" else b.or_(x, y), BOOL, t)
            case BinOp(op=op):
                raise UnsupportedError(f"operator {op!r} in the LLVM backend")
            case Not(a, t):
                return convert(b, b.not_(self.typed(a, BOOL)), BOOL, t)
            case Cast(t, a):
                return self.typed(a, t)
            case Call(name, args, t):
                return convert(b, *self.call(name, args, t), t)
            case MapGet(name, keys, t):
                m = self.g.map(name)
                return convert(b, m.get(b, self.keys(m, keys)), m.spec.value_type, t)
        raise ValueError(f"imp: not an expression: {e!r}")

    def call(self, name: str, args, t: Type) -> tuple:
        """(value, its type) of a registered function (toaster/functions.py): its native code
        (natives.py), or its string table when an argument is a string; else refused by name."""
        f = FUNCTIONS.get(name)
        got = native_call(self, f, args, t) if f is not None else None
        if got is not None:
            return got
        if f is not None and any(a.type == STRING for a in args):
            return self.string_call(name, args, t)
        raise UnsupportedError(f"function {name}() in the LLVM backend"
                               + ("" if f is None else f" (with arguments of types {', '.join(str(a.type) for a in args)})"))

    def string_call(self, name: str, args, t: Type) -> tuple:
        """A function of one string whose other arguments are literals: a load from its property
        table (all literals: folded here, unless it fails, which must then happen at run time)."""
        free = [i for i, a in enumerate(args) if not isinstance(a, Lit)]
        if len(free) > 1 or (free and args[free[0]].type != STRING):
            raise UnsupportedError(f"function {name}() in the LLVM backend (only with literal arguments "
                                   "besides one string)")
        if not free:
            try:
                value = call_builtin(name, [a.value for a in args])
            except Exception:
                value = None
            if _has_native_value(value, t):
                return self.g.literal(value, t), t
        pos = free[0] if free else next(i for i, a in enumerate(args) if a.type == STRING)
        lits = tuple(None if i == pos else a.value for i, a in enumerate(args))
        table = self.g.string_table(name, lits, pos, t)
        v = self.table_load(table, self.expr(args[pos]))
        return (self.b.icmp_signed("!=", v, i64(0)), BOOL) if t == BOOL else (v, t)

    def table_load(self, table: StringTable, sid):
        b = self.b
        ety = F64 if table.type == FLOAT else I64
        g = self.g.module.get_global(table.symbol)
        v = b.load(b.gep(b.load(g, typ=PTR), [sid], inbounds=True, source_etype=ety), typ=ety)
        if not table.total:    # an invalid entry: remember its id, the engine raises after the batch
            ok_ptr = b.load(self.g.module.get_global(table.symbol + ".ok"), typ=PTR)
            ok = b.load(b.gep(ok_ptr, [sid], inbounds=True, source_etype=I8), typ=I8)
            with b.if_then(b.icmp_unsigned("==", ok, ir.Constant(I8, 0)), likely=False):
                b.store(sid, self.g.module.get_global(table.symbol + ".error"))
        return v

    def compare(self, op, l, r):
        b = self.b
        lt, rt = l.type, r.type
        if STRING in (lt, rt):
            if op in ("=", "!="):
                return b.icmp_unsigned(op.replace("=", "==") if op == "=" else op, self.expr(l), self.expr(r))
            if lt != rt:
                raise UnsupportedError(f"comparison {op!r} between {lt} and {rt} in the LLVM backend")
            if isinstance(l, Lit) and isinstance(r, Lit):
                return ir.Constant(I1, int(PY_COMPARE[op](l.value, r.value)))
            rank = self.g.string_table(RANK, (None,), 0, INT)   # ids compare as their sorted positions
            return b.icmp_signed(op, self.table_load(rank, self.expr(l)), self.table_load(rank, self.expr(r)))
        if FLOAT in (lt, rt):
            x, y = self.typed(l, FLOAT), self.typed(r, FLOAT)
            if op == "!=":
                return b.fcmp_unordered("!=", x, y)     # NaN != NaN, as in Python
            return b.fcmp_ordered("==" if op == "=" else op, x, y)
        if lt == BOOL and rt == BOOL:
            return b.icmp_unsigned("==" if op == "=" else op, self.expr(l), self.expr(r))
        x, y = self.typed(l, INT), self.typed(r, INT)
        return b.icmp_signed("==" if op == "=" else op, x, y)

    def keys(self, m: NativeMap, key_exprs):
        if len(key_exprs) != m.K:
            raise ValueError(f"imp: map {m.name} has {m.K} keys, used with {len(key_exprs)}")
        return [encode_key(self.b, self.typed(k, t), t) for k, t in zip(key_exprs, m.spec.key_types)]

    # ------------------------------------------------------------ statements
    def stmt(self, s):
        b = self.b
        match s:
            case Declare(var, init):
                self.bind(var, self.expr(init), init.type)
            case Assign(var, value):
                slot, vt = self.lookup(var.name)
                b.store(self.typed(value, vt), slot)
            case If(cond, then, orelse):
                c = self.typed(cond, BOOL)
                if orelse:
                    with b.if_else(c) as (on_then, on_else):
                        with on_then:
                            self.block(then)
                        with on_else:
                            self.block(orelse)
                else:
                    with b.if_then(c):
                        self.block(then)
            case MapAdd(name, keys, value):
                m = self.g.map(name)
                outer, self.blame = self.blame, name
                m.add(b, self.keys(m, keys), self.typed(value, m.spec.value_type))
                self.blame = outer
            case MapSet(name, keys, value):
                m = self.g.map(name)
                outer, self.blame = self.blame, name
                m.set(b, self.keys(m, keys), self.typed(value, m.spec.value_type))
                self.blame = outer
            case MapClear(name):
                self.g.map(name).clear(b)
            case ForEach():
                self.for_each(s)
            case _:
                raise ValueError(f"imp: not a statement: {s!r}")

    def for_each(self, s: ForEach):
        if s.map == LEVELS_MAP and masked_update(self, s):      # a range index's levels (range_index.py)
            return
        m = self.g.map(s.map)
        if len(s.pattern) != m.K or len(s.key_vars) != m.K:
            raise ValueError(f"imp: ForEach over {m.name} with a pattern of the wrong length")
        b = self.b
        types = m.spec.key_types
        bound = [j for j, p in enumerate(s.pattern) if p is not None]
        bvals = {j: encode_key(b, self.typed(s.pattern[j], types[j]), types[j]) for j in bound}

        def visit(keys_ptr, e, value):
            """Body for one entry (value already known nonzero)."""
            self.scopes.append({})
            self.bind(s.value_var, value, m.spec.value_type)
            for j, kv in enumerate(s.key_vars):
                if s.pattern[j] is None and kv is not None:
                    self.bind(kv, decode_key(self.b, m.key_at(self.b, keys_ptr, e, j), types[j]), types[j])
            self.block(s.body)
            self.scopes.pop()

        if len(bound) == m.K:
            # point lookup (also the no-key scalar map)
            v = m.get(b, [bvals[j] for j in range(m.K)])
            with b.if_then(m.is_nonzero(b, v)):
                visit(None, None, v)
            return
        idx = m.index_for(bound) if bound else None
        if idx is not None:
            self.chain_loop(m, idx, [bvals[j] for j in m.index_sets[idx]], visit)
        elif not bvals and BRANCH_FREE_SUMS and (found := branch_free_sum(s)) is not None:
            self.scan_sum(m, s, *found)
        else:
            # full scan; bound positions without an index are filtered here
            self.scan_loop(m, bvals, visit)

    def _counter(self, name, init):
        slot = self.new_local(LocalRef(name, INT))
        self.b.store(init, slot)
        return slot

    def scan_loop(self, m: NativeMap, bvals, visit):
        b = self.b
        count = b.load(m.g_count, typ=I64)
        keys_ptr = b.load(m.g_keys, typ=PTR)
        ctr = self._counter("scan.e", i64(0))
        head = self.fn.append_basic_block("scan.head")
        body = self.fn.append_basic_block("scan.body")
        done = self.fn.append_basic_block("scan.done")
        b.branch(head)
        b.position_at_end(head)
        e = b.load(ctr, typ=I64)
        b.cbranch(b.icmp_signed("<", e, count), body, done)
        b.position_at_end(body)
        v = m.val_at(b, e)
        ok = m.is_nonzero(b, v)
        for j, k in bvals.items():
            ok = b.and_(ok, b.icmp_unsigned("==", m.key_at(b, keys_ptr, e, j), k))
        with b.if_then(ok):
            visit(keys_ptr, e, v)
        b.store(b.add(e, i64(1)), ctr)
        b.branch(head)
        b.position_at_end(done)

    def scan_sum(self, m: NativeMap, s: ForEach, cond, decls, acc: LocalRef, term):
        """A full scan that only adds a pure float term of the entries passing a pure test into
        a local (scan_sum.py): per entry, with no branch, `acc = acc + (live and cond ? term :
        -0.0)` (-0.0 adds nothing, even to -0.0), the adds marked `reassoc`: LLVM vectorizes the
        loop with several partial sums, no longer bound by one add's latency (PSP's sum of
        prices over its ~20 volumes per event)."""
        b = self.b
        count = b.load(m.g_count, typ=I64)
        keys_ptr = b.load(m.g_keys, typ=PTR)
        acc_slot, _ = self.lookup(acc.name)
        ctr = self._counter("sum.e", i64(0))
        head = self.fn.append_basic_block("sum.head")
        body = self.fn.append_basic_block("sum.body")
        done = self.fn.append_basic_block("sum.done")
        b.branch(head)
        b.position_at_end(head)
        e = b.load(ctr, typ=I64)
        b.cbranch(b.icmp_signed("<", e, count), body, done)
        b.position_at_end(body)
        v = m.val_at(b, e)
        self.scopes.append({})
        self.bind(s.value_var, v, m.spec.value_type)
        for j, kv in enumerate(s.key_vars):     # every key of entries [0, count) is readable
            if kv is not None:
                self.bind(kv, decode_key(b, m.key_at(b, keys_ptr, e, j), m.spec.key_types[j]), m.spec.key_types[j])
        ok = b.and_(m.is_nonzero(b, v), self.typed(cond, BOOL))
        if acc.type == INT:     # a skipped entry's value reads as 0 (scan_sum._pure: no overflow there)
            self.bind(s.value_var, b.select(ok, v, ir.Constant(v.type, 0)), m.spec.value_type)
        for d in decls:
            self.stmt(d)
        if acc.type == FLOAT:
            add = b.select(ok, self.typed(term, FLOAT), ir.Constant(F64, -0.0))
            b.store(b.fadd(b.load(acc_slot, typ=F64), add, flags=("reassoc",)), acc_slot)
        else:       # checked, in order: adding 0 never overflows, so the same additions overflow
            add = b.select(ok, self.typed(term, INT), i64(0))
            b.store(self.g.overflow.arith(b, "+", b.load(acc_slot, typ=I64), add, self.blame), acc_slot)
        self.scopes.pop()
        b.store(b.add(e, i64(1)), ctr)
        b.branch(head)
        b.position_at_end(done)

    def chain_loop(self, m: NativeMap, idx, pk, visit):
        b = self.b
        keys_ptr = b.load(m.g_keys, typ=PTR)
        h = b.call(m.ix_find[idx], pk)
        slots = b.load(m.g_ix_slots[idx], typ=PTR)
        nxt = b.load(m.g_ix_next[idx], typ=PTR)
        cur = self._counter("chain.s", b.load(b.gep(slots, [h], inbounds=True, source_etype=I64), typ=I64))
        head = self.fn.append_basic_block("chain.head")
        body = self.fn.append_basic_block("chain.body")
        done = self.fn.append_basic_block("chain.done")
        b.branch(head)
        b.position_at_end(head)
        s = b.load(cur, typ=I64)
        b.cbranch(b.icmp_unsigned("!=", s, i64(0)), body, done)
        b.position_at_end(body)
        e = b.sub(s, i64(1))
        v = m.val_at(b, e)
        with b.if_then(m.is_nonzero(b, v)):
            visit(keys_ptr, e, v)
        b.store(b.load(b.gep(nxt, [e], inbounds=True, source_etype=I64), typ=I64), cur)
        b.branch(head)
        b.position_at_end(done)
