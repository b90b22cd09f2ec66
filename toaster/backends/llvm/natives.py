"""Native code of the registered scalar functions (toaster/functions.py) in the LLVM backend.

A function's `native` hook is one of
  * an intrinsic `llvm.<f>.f64` over doubles (cos, atan2, pow, ...): LLVM lowers it to the libm
    symbol <f> (or folds it), which `register_libm_symbols` binds in the JIT;
  * the name of an IR builder below (type-dependent ones: listmin, abs, floor, casts, hash, ...);
and a function with a `formula` runs that formula over `IRMath`, the same definition the Python
engines run over floats. No Python is called per tuple. A string argument goes through the
codegen's string tables instead (one Python call per distinct string).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import llvmlite.binding as llvm
from llvmlite import ir

from toaster.functions import FUNCTIONS, Function
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, Type
from toaster.backends.llvm.hashmap import F64, I64, i64

# libm symbols that LLVM may lower the math intrinsics (and its libcall simplifications) to
LIBM_SYMBOLS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2",
                "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "hypot", "fmod",
                "ldexp", "frexp", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "fabs", "sincos",
                "__exp10", "__sincos")
_registered: dict[str, int] = {}


def register_libm_symbols() -> dict:
    """Bind the libm symbols in the JIT (once); the ones this libm lacks are left out."""
    if not _registered:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or None)
        for name in LIBM_SYMBOLS:
            try:
                addr = ctypes.cast(getattr(libm, name), ctypes.c_void_p).value
            except AttributeError:
                continue
            llvm.add_symbol(name, addr)
            _registered[name] = addr
    return _registered


def intrinsic(module: ir.Module, name: str, ret=F64, args=(F64,)):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    return fn


def float_to_int(b: ir.IRBuilder, v):
    """Truncation toward zero, saturating, nan -> 0: toaster.functions.float_to_int natively."""
    return b.call(intrinsic(b.module, "llvm.fptosi.sat.i64.f64", I64, (F64,)), [v])


class IRMath:
    """The math namespace of toaster.functions' formulas, over doubles in LLVM IR."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    def add(self, x, y):
        return self.b.fadd(x, y)

    def sub(self, x, y):
        return self.b.fsub(x, y)

    def mul(self, x, y):
        return self.b.fmul(x, y)

    def div(self, x, y):
        return self.b.fdiv(x, y)        # IEEE: x/0 is +-inf, 0/0 is nan

    def const(self, v: float):
        return ir.Constant(F64, float(v))

    def _intrinsic(self, name, *args):
        return self.b.call(intrinsic(self.b.module, f"llvm.{name}.f64", F64, (F64,) * len(args)), list(args))

    def sqrt(self, x):
        return self._intrinsic("sqrt", x)

    def acos(self, x):
        return self._intrinsic("acos", x)

    def atan2(self, y, x):
        return self._intrinsic("atan2", y, x)

    def clamp(self, x, lo: float, hi: float):
        """x within [lo, hi]; nan stays nan (ordered comparisons are false on nan)."""
        b, lo, hi = self.b, self.const(lo), self.const(hi)
        return b.select(b.fcmp_ordered(">", x, hi), hi, b.select(b.fcmp_ordered("<", x, lo), lo, x))

    def where_finite(self, x, a, y):
        b = self.b
        fabs = b.call(intrinsic(b.module, "llvm.fabs.f64"), [x])
        return b.select(b.fcmp_ordered("<", fabs, self.const(float("inf"))), a, y)

    def where_nan(self, x, a, y):
        return self.b.select(self.b.fcmp_unordered("uno", x, x), a, y)

    def where_greater(self, x, y, a, c):
        return self.b.select(self.b.fcmp_ordered(">", x, y), a, c)


def native_call(tg, f: Function, args, t: Type):
    """(value, type) of f(args) in native code, or None when the argument types need the string
    tables (or f has no native code). `tg` is the codegen's trigger generator (b, typed, expr)."""
    numeric = all(a.type in (INT, DATE, FLOAT) for a in args)
    if f.formula is not None and numeric:
        return f.formula(IRMath(tg.b), *(tg.typed(a, FLOAT) for a in args)), FLOAT
    if f.native is None:
        return None
    if f.native.startswith("llvm."):
        if not numeric:
            return None
        m = IRMath(tg.b)
        return m._intrinsic(f.native[len("llvm."):-len(".f64")], *(tg.typed(a, FLOAT) for a in args)), FLOAT
    return BUILDERS[f.native](tg, args)


# ---------------------------------------------------------------------------- IR builders
# each: (trigger generator, argument expressions) -> (value, type), or None (not these types)

def _numeric(args) -> bool:
    return all(a.type in (INT, DATE, FLOAT) for a in args)


def _list_extreme(op: str):
    def build(tg, args):
        if not _numeric(args):
            return None
        b = tg.b
        wt = FLOAT if any(a.type == FLOAT for a in args) else INT
        acc = tg.typed(args[0], wt)
        for a in args[1:]:
            x = tg.typed(a, wt)
            better = b.fcmp_ordered(op, x, acc) if wt == FLOAT else b.icmp_signed(op, x, acc)
            acc = b.select(better, x, acc)
        return acc, wt
    return build


def _abs(tg, args):
    (a,) = args
    if a.type == FLOAT:
        return tg.b.call(intrinsic(tg.b.module, "llvm.fabs.f64"), [tg.typed(a, FLOAT)]), FLOAT
    if a.type in (INT, DATE):
        x = tg.typed(a, INT)
        return tg.b.select(tg.b.icmp_signed("<", x, i64(0)), tg.b.neg(x), x), INT
    return None


def _rounding(name: str):
    def build(tg, args):
        (a,) = args
        if a.type == FLOAT:
            return tg.b.call(intrinsic(tg.b.module, f"llvm.{name}.f64"), [tg.typed(a, FLOAT)]), FLOAT
        if a.type in (INT, DATE):
            return tg.typed(a, INT), INT
        return None
    return build


def _cast_int(tg, args):
    (a,) = args
    if a.type == FLOAT:
        return float_to_int(tg.b, tg.typed(a, FLOAT)), INT
    if a.type in (INT, DATE, BOOL):
        return tg.typed(a, INT), INT
    return None


def _cast_float(tg, args):
    (a,) = args
    return (tg.typed(a, FLOAT), FLOAT) if a.type != STRING else None


def _cast_date(tg, args):
    (a,) = args
    return (tg.typed(a, INT), DATE) if a.type in (INT, DATE) else None


def _cast_string(tg, args):
    if args[0].type == STRING:
        return tg.expr(args[0]), STRING
    return None       # a new string from a number: the dictionary lives in Python (refused)


def _date_part(tg, args):
    from toaster.imperative.ir import Lit
    part, d = args
    if not (isinstance(part, Lit) and d.type in (INT, DATE)):
        return None
    b, v = tg.b, tg.typed(d, INT)
    match str(part.value).lower():
        case "year":
            return b.sdiv(v, i64(10000)), INT
        case "month":
            return b.srem(b.sdiv(v, i64(100)), i64(100)), INT
        case "day":
            return b.srem(v, i64(100)), INT
    return None


def _mix64(b: ir.IRBuilder, z):
    z = b.mul(b.xor(z, b.lshr(z, i64(30))), i64(0xBF58476D1CE4E5B9 - (1 << 64)))
    z = b.mul(b.xor(z, b.lshr(z, i64(27))), i64(0x94D049BB133111EB - (1 << 64)))
    return b.xor(z, b.lshr(z, i64(31)))


def _hash(tg, args):
    (a,) = args
    b = tg.b
    if a.type == FLOAT:
        x = tg.typed(a, FLOAT)
        zero = ir.Constant(F64, 0.0)
        x = b.select(b.fcmp_ordered("==", x, zero), zero, x)       # -0.0 hashes as 0.0
        return _mix64(b, b.bitcast(x, I64)), INT
    if a.type in (INT, DATE):
        return _mix64(b, tg.typed(a, INT)), INT
    if a.type == BOOL:
        return _mix64(b, b.zext(tg.expr(a), I64)), INT
    return None


BUILDERS = {
    "listmin": _list_extreme("<"), "listmax": _list_extreme(">"), "abs": _abs,
    "floor": _rounding("floor"), "ceil": _rounding("ceil"), "cast_int": _cast_int, "cast_float": _cast_float,
    "cast_date": _cast_date, "cast_string": _cast_string, "date_part": _date_part, "hash": _hash,
}


# the ordered-index functions of pass m3_range_index (their own module: they read index maps)
from toaster.backends.llvm.range_index import RIX_BUILDERS  # noqa: E402
BUILDERS.update(RIX_BUILDERS)


def check_registry() -> None:
    """Every native hook names an intrinsic or a builder here (run by the tests)."""
    for f in FUNCTIONS:
        if f.native is not None and not f.native.startswith("llvm.") and f.native not in BUILDERS:
            raise AssertionError(f"{f.name}: no native builder {f.native!r}")


__all__ = ["register_libm_symbols", "native_call", "float_to_int", "IRMath", "check_registry"]
