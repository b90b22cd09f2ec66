"""Imperative IR -> Python `ast` (the per-partition and driver-side block functions).

The statements come from the shared lowering (toaster/backends/spark/blocks.py), and their
meaning is the imp interpreter's (toaster/imperative/interpreter.py), node for node:
  * maps are Python dicts from key tuples to numbers, passed to the block function as parameters
    named `m_<MAP>` (the lowering's scratch maps are dicts local to the function); a missing key
    reads as 0; zero entries are never stored (MapAdd / MapSet drop a key whose value becomes 0),
    so ForEach need not skip zeros;
  * '/', casts and function calls are toaster.functions' (`ieee_div`, `scalar_cast`,
    `scalar_call`, imported by worker.py), comparisons Python's;
  * integers are 64-bit: an integer `+ - *` whose result leaves the range, or an integer sum
    stored into a map, calls `int64_overflow(MAP)` (worker.py), which fails the batch naming the
    map the interpreter would blame (the written map, else the statement's: runtime/int64.py).
A slice (ForEach with bound positions) reads a secondary index taken at the start of its
top-level statement with `index_of` (worker.py): views are `IndexedMap`s whose indexes are
maintained across batches, so a slice costs what it returns; temps and deltas (plain dicts,
O(batch)) get one built by a scan. A statement that writes the map it slices reads a snapshot
of (key, value) pairs instead.
"""
from __future__ import annotations

import ast
import itertools
from collections import Counter

from toaster.errors import UnsupportedError
from toaster.imperative.ir import (LocalRef, Lit, BinOp, Not, Cast, Call, MapGet, Declare, Assign, If,
                                   ForEach, MapAdd, MapSet, MapClear)
from toaster.runtime.int64 import blame_maps, imp_writes
from toaster.types import INT

_ARITH = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}
_CMP = {"=": ast.Eq, "!=": ast.NotEq, "<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE}


def map_param(name: str) -> str:
    return f"m_{name}"


def name(n: str, ctx=None) -> ast.Name:
    return ast.Name(n, ctx or ast.Load())


def call(fn, *args) -> ast.Call:
    return ast.Call(fn if isinstance(fn, ast.expr) else name(fn), list(args), [])


def attr_call(obj, method: str, *args) -> ast.Call:
    return ast.Call(ast.Attribute(obj if isinstance(obj, ast.expr) else name(obj), method, ast.Load()), list(args), [])


def const(v) -> ast.Constant:
    return ast.Constant(v)


def tuple_of(elts, ctx=None) -> ast.Tuple:
    return ast.Tuple(list(elts), ctx or ast.Load())


def assign(target: str, value) -> ast.Assign:
    return ast.Assign([name(target, ast.Store())], value)


class _PyGen:
    def __init__(self, local_maps=()):
        self.counter = 0
        self.indexes = {}     # (map, bound positions) -> index variable of the current statement
        self.local_maps = set(local_maps)   # scratch maps: an overflow is not blamed on them
        self.blame = None     # the map an overflow in the current top-level statement names

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"_{base}{self.counter}"

    def local(self, r: LocalRef) -> str:
        return f"l_{r.name}"

    # ------------------------------------------------------------ expressions
    def expr(self, e) -> ast.expr:
        match e:
            case LocalRef():
                return name(self.local(e))
            case Lit(v, _):
                return const(v)
            case BinOp("/", a, b, _):
                return call("ieee_div", self.expr(a), self.expr(b))
            case BinOp(op, a, b, t) if op in _ARITH:
                out = ast.BinOp(self.expr(a), _ARITH[op](), self.expr(b))
                return self.checked(out) if t == INT else out
            case BinOp(op, a, b, _) if op in _CMP:
                return ast.Compare(self.expr(a), [_CMP[op]()], [self.expr(b)])
            case BinOp("and" | "or" as op, a, b, _):
                return ast.BoolOp(ast.And() if op == "and" else ast.Or(), [self.expr(a), self.expr(b)])
            case Not(a, _):
                return ast.UnaryOp(ast.Not(), self.expr(a))
            case Cast(ty, a):
                return call("scalar_cast", self.expr(a), const(str(ty)))
            case Call(fn, args, ty):     # toaster.functions' registry, as every Python engine
                return call("scalar_call", const(fn), ast.List([self.expr(a) for a in args], ast.Load()),
                            const(str(ty)))
            case MapGet(m, keys, _):
                return attr_call(map_param(m), "get", tuple_of(self.expr(k) for k in keys), const(0))
        raise UnsupportedError(f"imperative expression {e!r} in the PySpark backend")

    def checked(self, value: ast.expr) -> ast.expr:
        """`(_r if INT64_MIN <= (_r := value) <= INT64_MAX else int64_overflow(M))`: the
        interpreter's 64-bit integer arithmetic (a result out of range fails the batch)."""
        walrus = ast.NamedExpr(name("_r", ast.Store()), value)
        ok = ast.Compare(name("INT64_MIN"), [ast.LtE(), ast.LtE()], [walrus, name("INT64_MAX")])
        return ast.IfExp(ok, name("_r"), call("int64_overflow", const(self.blame)))

    # ------------------------------------------------------------- statements
    def block(self, stmts, depth: int) -> list:
        out = []
        for s in stmts:
            out += self.stmt(s, depth)
        return out or [ast.Pass()]

    def top_level(self, stmts) -> list:
        """Statements of a function body; each gets the secondary indexes its nested slices use."""
        out = []
        blames = blame_maps(stmts, lambda st: (m for m in imp_writes(st) if m not in self.local_maps))
        for s, blame in zip(stmts, blames):
            self.blame = blame or "?"
            self.indexes = {}
            wanted = []
            _nested_slices(s, 0, wanted)
            for m, bound in dict.fromkeys(wanted):
                ix = self.fresh("ix")
                snapshot = _writes([s], m)
                self.indexes[(m, bound)] = (ix, snapshot)
                if snapshot:
                    out += self.build_index(ix, m, bound)
                else:
                    out.append(assign(ix, call("index_of", name(map_param(m)), tuple_of(map(const, bound)))))
            out += self.stmt(s, 0)
        return out

    def build_index(self, ix: str, m: str, bound: tuple) -> list:
        """{subkey: [(key, value), ...]} of m as it is now (for statements that write m)."""
        k, v = self.fresh("k"), self.fresh("v")
        sub = tuple_of(ast.Subscript(name(k), const(i), ast.Load()) for i in bound)
        append = attr_call(attr_call(ix, "setdefault", sub, ast.List([], ast.Load())), "append",
                           tuple_of([name(k), name(v)]))
        return [assign(ix, ast.Dict([], [])),
                ast.For(tuple_of([name(k, ast.Store()), name(v, ast.Store())], ast.Store()),
                        attr_call(map_param(m), "items"), [ast.Expr(append)], [])]

    def stmt(self, s, depth: int) -> list:
        match s:
            case Declare(var, init) | Assign(var, init):
                return [assign(self.local(var), self.expr(init))]
            case If(cond, then, orelse):
                return [ast.If(self.expr(cond), self.block(then, depth), self.block(orelse, depth) if orelse else [])]
            case MapClear(m):
                return [ast.Expr(attr_call(map_param(m), "clear"))]
            case MapAdd(m, keys, value) | MapSet(m, keys, value):
                k, v = self.fresh("k"), self.fresh("v")
                mp = map_param(m)
                out = [assign(k, tuple_of(self.expr(x) for x in keys))]
                if isinstance(s, MapAdd):
                    # 64-bit integers: a sum out of range fails the batch (worker.int64_overflow)
                    blame = self.blame if m in self.local_maps else m
                    out += [assign(v, ast.BinOp(attr_call(mp, "get", name(k), const(0)), ast.Add(), self.expr(value))),
                            ast.parse(f"if {v}.__class__ is int and ({v} > INT64_MAX or {v} < INT64_MIN): "
                                      f"int64_overflow({blame!r})").body[0]]
                else:
                    out.append(assign(v, self.expr(value)))
                return out + [ast.If(ast.Compare(name(v), [ast.NotEq()], [const(0)]),
                                     [ast.Assign([ast.Subscript(name(mp), name(k), ast.Store())], name(v))],
                                     [ast.Expr(attr_call(mp, "pop", name(k), const(None)))])]
            case ForEach():
                return self.foreach(s, depth)
        raise UnsupportedError(f"imperative statement {type(s).__name__} in the PySpark backend")

    def foreach(self, s: ForEach, depth: int) -> list:
        mp = map_param(s.map)
        bound = tuple(i for i, p in enumerate(s.pattern) if p is not None)
        body = self.block(s.body, depth + 1)
        val = name(self.local(s.value_var), ast.Store())
        if not bound:
            target = tuple_of([tuple_of((name(self.local(kv), ast.Store()) for kv in s.key_vars), ast.Store()), val],
                              ast.Store())
            items = attr_call(mp, "items")
            if _writes(s.body, s.map):      # reads see the pre-state; never iterate a dict being updated
                items = call("list", items)
            return [ast.For(target, items, body, [])]
        k = self.fresh("k")
        unpack = [assign(self.local(kv), ast.Subscript(name(k), const(i), ast.Load()))
                  for i, kv in enumerate(s.key_vars) if kv is not None]
        want = tuple_of(self.expr(s.pattern[i]) for i in bound)
        target = tuple_of([name(k, ast.Store()), val], ast.Store())
        ix, snapshot = self.indexes.get((s.map, bound), (None, False))
        if snapshot:
            return [ast.For(target, attr_call(ix, "get", want, tuple_of([])), unpack + body, [])]
        if ix is not None:
            value = assign(self.local(s.value_var), ast.Subscript(name(mp), name(k), ast.Load()))
            return [ast.For(name(k, ast.Store()), attr_call(ix, "get", want, tuple_of([])),
                            [value] + unpack + body, [])]
        got = tuple_of(ast.Subscript(name(k), const(i), ast.Load()) for i in bound)
        items = attr_call(mp, "items")
        if _writes(s.body, s.map):
            items = call("list", items)
        return [ast.For(target, items,
                        [ast.If(ast.Compare(got, [ast.Eq()], [want]), unpack + body, [])], [])]


def _nested_slices(s, depth: int, out: list) -> None:
    match s:
        case ForEach(m, pattern, _, _, body):
            bound = tuple(i for i, p in enumerate(pattern) if p is not None)
            if bound:
                out.append((m, bound))
            for b in body:
                _nested_slices(b, depth + 1, out)
        case If(_, then, orelse):
            for b in then + orelse:
                _nested_slices(b, depth, out)


def _writes(stmts, m: str) -> bool:
    for s in stmts:
        match s:
            case MapAdd(t, _, _) | MapSet(t, _, _) | MapClear(t) if t == m:
                return True
            case ForEach(_, _, _, _, body) if _writes(body, m):
                return True
            case If(_, then, orelse) if _writes(then + orelse, m):
                return True
    return False


def block_function(fname: str, params: list, prologue: list, body_stmts, returns: list | None,
                   local_maps=(), doc: str | None = None) -> ast.FunctionDef:
    """def fname(m_A, m_B, ...): [doc] <prologue> <body> [return (m_X, ...)]

    local_maps: the function's own scratch maps (its prologue creates them)."""
    gen = _PyGen(local_maps)
    body = ([ast.Expr(const(doc))] if doc else []) + list(prologue) + gen.top_level(body_stmts)
    if returns is not None:
        body.append(ast.Return(tuple_of(name(map_param(r)) for r in returns)))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(map_param(p)) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fn = ast.FunctionDef(fname, args, body or [ast.Pass()], [], None, type_params=[])
    _flatten_nesting(fn, itertools.count(1))
    return fn


# Python refuses more than 20 statically nested blocks in one function ("too many statically
# nested blocks"); a deeper block becomes a local function called in its place, which starts
# its own count. Names it rebinds that the enclosing function also binds are `nonlocal`
# (imperative locals are block-scoped, so the others are not read outside).
_MAX_NESTED_BLOCKS = 15


def _flatten_nesting(fn: ast.FunctionDef, counter) -> None:
    params = {a.arg for a in fn.args.args}
    _flatten_body(fn, fn.body, 0, params, counter)


def _flatten_body(fn, body: list, depth: int, params: set, counter) -> None:
    for s in body:
        if isinstance(s, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if not inner:
                    continue
                if depth + 1 >= _MAX_NESTED_BLOCKS:
                    setattr(s, field, _as_local_function(fn, inner, params, counter))
                else:
                    _flatten_body(fn, inner, depth + 1, params, counter)


def _as_local_function(fn, inner: list, params: set, counter) -> list:
    everywhere, here = _stored_names(fn.body), _stored_names(inner)
    shared = sorted(n for n in here if n in params or everywhere[n] > here[n])
    name_ = f"_nested_block{next(counter)}"
    sub = ast.FunctionDef(name_, ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                kw_defaults=[], kwarg=None, defaults=[]),
                          ([ast.Nonlocal(shared)] if shared else []) + inner, [], None, type_params=[])
    still_bound = {n for n in everywhere if everywhere[n] > here[n]}   # outside the moved block
    _flatten_body(sub, sub.body, 0, params | still_bound, counter)
    return [sub, ast.Expr(call(name_))]


def _stored_names(stmts) -> Counter:
    """How often each name is bound in stmts, not counting local functions' own scopes."""
    out: Counter = Counter()
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef):
            out[node.name] += 1
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out[node.id] += 1
        todo.extend(ast.iter_child_nodes(node))
    return out
