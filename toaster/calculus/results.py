"""Result terms: how a reported value column is computed from materialized maps on read.

DBToaster's generalized HO-IVM materializes a query piecewise and reconstitutes it when it is
read (VLDBJ'14 Alg. 2): AVG is SUM/COUNT, MIN/MAX and COUNT(DISTINCT) reduce a map keyed by the
group and the aggregated value (a value-multiplicity map, exact under deletions), HAVING
filters groups, expressions combine aggregates. Terms are built from these leaves and the
calculus' Const / Arith / Func / Cmp / Prod / Sum / Value nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.functions import COMPARISONS, call, cast, divide
from toaster.calculus.ir import Arith, Cmp, Const, Func, Prod, Sum, Value
from toaster.types import FLOAT, Type


@dataclass(frozen=True, slots=True)
class MapValue:
    """The value of `map` at the row's key."""
    map: str
    type: Type


@dataclass(frozen=True, slots=True)
class MapReduce:
    """kind 'min' | 'max' | 'count' over the entries of `map` whose key starts with the row's key
    and whose value is positive; the last `extra` key positions hold the aggregated value(s)."""
    kind: str
    map: str
    extra: int
    type: Type


@dataclass(frozen=True, slots=True)
class GlobalValue:
    """The value of the key-less `map` (an uncorrelated scalar subquery), whatever the row."""
    map: str
    type: Type


@dataclass(frozen=True, slots=True)
class TopValue:
    """How many copies of the row's key are among the first `limit` rows of the bag `map` (keyed
    by the row's key columns, valued by multiplicities) in the order `order` ((key position,
    descending[, position of its null flag]); NULLs last both ways, as DuckDB's default; ties
    broken by the whole key, ascending): an operand's ORDER BY ... LIMIT n
    in a set operation. A top-n is not a sum of deltas, so the operand is maintained whole and
    cut when the result is read, as a top-level ORDER BY/LIMIT is."""
    map: str
    order: tuple
    limit: int
    type: Type


@dataclass(frozen=True, slots=True)
class KeyRef:
    """The row's key column `index`."""
    index: int
    type: Type


_CMP = COMPARISONS


def null_last_key(v, descending: bool) -> tuple:
    """A sort key of one ORDER BY value (a sort with reverse=descending): NULL last either way
    (DuckDB's default NULLS LAST); strings after numbers, as the engines' row order."""
    if v is None:
        return (-1,) if descending else (3,)
    return (1, v) if isinstance(v, str) else (0, v)
NULL_UNLESS = "null_unless"     # null_unless(value, present): NULL where present is 0 (a count or 1 - flag)
KLEENE_OR = "kleene_or"         # kleene_or(c, ...): 1 if some c is 1, else NULL if some c is NULL, else 0


class RowContext:
    """The maps of one result, indexed for reads by row key."""

    def __init__(self, maps: dict, nkeys: int):
        self.maps = maps
        self.nkeys = nkeys
        self._by_prefix: dict = {}
        self._tops: dict = {}

    def prefix_index(self, name: str) -> dict:
        idx = self._by_prefix.get(name)
        if idx is None:
            idx = {}
            for k, v in self.maps[name].items():
                if v > 0:
                    idx.setdefault(tuple(k[:self.nkeys]), []).append(tuple(k[self.nkeys:]))
            self._by_prefix[name] = idx
        return idx

    def top_counts(self, t: TopValue) -> dict:
        """key -> copies of it kept by the top-n t (cached per term)."""
        kept = self._tops.get(t)
        if kept is None:
            rows = sorted(((tuple(k), v) for k, v in self.maps[t.map].items() if v > 0), key=lambda kv: kv[0])
            for pos, descending, *flag in reversed(t.order):   # stable sorts, last ORDER BY item first
                null = (lambda k, f=flag[0]: k[f]) if flag else (lambda k: False)
                rows.sort(key=lambda kv: null_last_key(None if null(kv[0]) else kv[0][pos], descending),
                          reverse=descending)
            kept, left = {}, t.limit
            for k, v in rows:
                if left <= 0:
                    break
                kept[k] = min(v, left)
                left -= kept[k]
            self._tops[t] = kept
        return kept


def eval_result(t, key: tuple, ctx: RowContext):
    match t:
        case MapValue(m, _):
            return ctx.maps[m].get(key, 0)
        case MapReduce(kind, m, _, _):
            rest = ctx.prefix_index(m).get(key, [])
            if kind == "count":
                return len(rest)
            if not rest:
                return 0
            vals = [r[0] for r in rest]
            return min(vals) if kind == "min" else max(vals)
        case GlobalValue(m, _):
            return ctx.maps[m].get((), 0)
        case TopValue():
            return ctx.top_counts(t).get(key, 0)
        case KeyRef(i, _):
            return key[i]
        case Const(v, _):
            return v
        case Func(name, (a, present), ty) if name == NULL_UNLESS:
            return cast(eval_result(a, key, ctx), ty) if eval_result(present, key, ctx) else None
        case Arith("neg", (a,), _):
            v = eval_result(a, key, ctx)
            return None if v is None else -v
        case Arith("/", (a, b), _):
            x, y = eval_result(a, key, ctx), eval_result(b, key, ctx)
            return None if x is None or y is None else divide(x, y)
        case Arith(op, args, ty):
            vals = [eval_result(a, key, ctx) for a in args]
            if None in vals:          # NULL in, NULL out
                return None
            if op == "+":
                v = sum(vals)
            elif op == "-":
                v = vals[0] - vals[1]
            else:
                v = 1
                for x in vals:
                    v *= x
            return float(v) if ty == FLOAT else v
        case Func(name, args, _) if name == KLEENE_OR:
            vals = [eval_result(a, key, ctx) for a in args]
            return 1 if any(v for v in vals if v is not None) else None if None in vals else 0
        case Func("coalesce", args, ty):      # the first argument that is not NULL
            for a in args:
                v = eval_result(a, key, ctx)
                if v is not None:
                    return cast(v, ty)
            return None
        case Func("nullif", (a, b), ty):      # NULL where a = b
            x, y = eval_result(a, key, ctx), eval_result(b, key, ctx)
            return None if x is None or (y is not None and x == y) else cast(x, ty)
        case Func(name, args, ty):
            vals = [eval_result(a, key, ctx) for a in args]
            return None if None in vals else cast(call(name, vals), ty)
        case Value(term):
            return eval_result(term, key, ctx)
        case Cmp(op, a, b):
            x, y = eval_result(a, key, ctx), eval_result(b, key, ctx)
            return None if x is None or y is None else 1 if _CMP[op](x, y) else 0
        case Prod(fs):
            v, unknown = 1, False
            for f in fs:
                x = eval_result(f, key, ctx)
                if x is None:
                    unknown = True
                    continue
                v = v * x
                if v == 0:
                    return 0      # false AND unknown is false
            return None if unknown else v
        case Sum(ts):
            vals = [eval_result(x, key, ctx) for x in ts]
            return None if None in vals else sum(vals)
    raise TypeError(f"not a result term: {t!r}")


def can_be_null(t) -> bool:
    """Whether the result term can be NULL (it reads a null_unless)."""
    if isinstance(t, Func) and t.name == NULL_UNLESS:
        return True
    match t:
        case Arith(_, args, _) | Func(_, args, _):
            return any(can_be_null(a) for a in args)
        case Prod(xs) | Sum(xs):
            return any(can_be_null(a) for a in xs)
        case Cmp(_, a, b):
            return can_be_null(a) or can_be_null(b)
        case Value(x):
            return can_be_null(x)
    return False


def result_maps(t) -> set:
    """Names of the maps a result term reads."""
    match t:
        case MapValue(m, _) | MapReduce(_, m, _, _) | GlobalValue(m, _) | TopValue(m, _, _, _):
            return {m}
        case Arith(_, args, _) | Func(_, args, _):
            out = set()
            for a in args:
                out |= result_maps(a)
            return out
        case Value(x):
            return result_maps(x)
        case Cmp(_, a, b):
            return result_maps(a) | result_maps(b)
        case Prod(xs) | Sum(xs):
            out = set()
            for x in xs:
                out |= result_maps(x)
            return out
    return set()
