"""Input blocks evaluated with Arrow/numpy instead of the native partition program.

An input block (native_input) pre-aggregates a slice of a batch into temps, e.g. TPC-H Q17's
`TMP_5[PK, Q] := AggSum([PK, Q], (DELTA LINEITEM)(...) * {L_EXTENDEDPRICE})`. The native path
first loads the slice into the `DELTA_R` map (a hash insert per row, keyed by every column) and
then loops over it: at SF 1 (~350 K rows per task) 0.8 s of loading and 0.25 s of loops per task
(profile in docs/spark-engine.md, "Input blocks through Arrow"). Most input blocks are filters,
products of columns and constants, and a group-by: a few numpy operations and one Arrow hash
group-by over the slice's columns, 2.5-4.5x less per slice (measured, same process and slices).

`compile_plan` turns such a block into a small tuple plan (picklable; nothing of the calculus
travels) or returns None when any statement has a shape it does not know; that block then runs
natively, as before, with the same result (both compute the block's sums; float sums may differ
in rounding order only, as they do between partitionings). `run_plan` evaluates a plan over a
slice's columns and returns each temp's nonzero entries as `NativeModule.entries` would.

Known shapes (anything else: None):
    statement  T[k..] := e   (each temp written once; every key a column of the batch)
    e          AggSum(g, e) with g a superset of the keys | Sum(e, ..) | Prod(factors)
    Prod       exactly one DeltaRel (distinct variables) and Value / Cmp factors
    terms      column variables, constants (int, float, date, string), float +, -, *, neg
    Cmp        numeric / date comparisons; string = and != against a constant
Integer temps take integer factors only, and a slice whose integer sums could pass 64 bits runs
natively (which raises the overflow the interpreter would).
"""
from __future__ import annotations

import numpy as np

from toaster.calculus import ir as C
from toaster.types import DATE, FLOAT, INT, STRING

_NUMERIC = (INT, FLOAT, DATE)
_CMP = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
        ">=": np.greater_equal}
_LIMIT = float(2 ** 62)        # integer sums whose magnitudes add up below this cannot overflow


class _Unknown(Exception):
    pass


# ------------------------------------------------------------------ compile time
def compile_plan(stmts, relation, value_types: dict):
    """The plan of an input block's statements over batch relation `relation` (a RelationDecl),
    or None. `value_types`: temp -> its value Type."""
    if getattr(relation, "has_nulls", False):
        return None
    targets = [s.target for s in stmts]
    if len(set(targets)) != len(targets):
        return None
    try:
        return tuple(_statement(s, relation, value_types[s.target]) for s in stmts)
    except _Unknown:
        return None


def _statement(st, relation, vtype):
    if st.op not in (":=", "+=") or vtype not in (INT, FLOAT):
        raise _Unknown
    terms = _terms(st.rhs, relation, set(v.name for v in st.keys))
    cols = {}
    for d in terms:
        cols.update(d[0])
    try:
        keys = tuple((cols[v.name], v.type) for v in st.keys)
    except KeyError:
        raise _Unknown from None
    if any(t not in (INT, FLOAT, DATE, STRING) for _, t in keys):
        raise _Unknown
    out_terms = []
    for colmap, factors in terms:
        if any(colmap.get(v.name) != cols[v.name] for v in st.keys):
            raise _Unknown
        for kind, *rest in factors:
            if vtype == INT and kind == "val" and _type(rest[0]) != INT:
                raise _Unknown
        out_terms.append(tuple(factors))
    return (st.target, vtype.value, keys, tuple(out_terms))


def _terms(e, relation, keys: set):
    """[(var name -> column position, factors)] of a sum of products over the batch."""
    match e:
        case C.AggSum(group, inner):
            if not keys <= {v.name for v in group}:
                raise _Unknown
            return _terms(inner, relation, keys)
        case C.Sum(terms):
            return [t for x in terms for t in _terms(x, relation, keys)]
        case C.Prod(factors):
            return [_product(factors, relation)]
        case C.DeltaRel():
            return [_product((e,), relation)]
    raise _Unknown


def _product(factors, relation):
    deltas = [f for f in factors if isinstance(f, C.DeltaRel)]
    if len(deltas) != 1 or deltas[0].name != relation.name or len(deltas[0].vars) != len(relation.columns):
        raise _Unknown
    names = [v.name if isinstance(v, C.Var) else None for v in deltas[0].vars]
    if None in names or len(set(names)) != len(names):
        raise _Unknown
    cols = {n: j for j, n in enumerate(names)}
    types = {n: relation.columns[j].type for n, j in cols.items()}
    out = []
    for f in factors:
        if isinstance(f, C.DeltaRel):
            continue
        if isinstance(f, C.Value):
            t = _term(f.term, cols, types)
            if _type(t) not in (INT, FLOAT):
                raise _Unknown
            out.append(("val", t))
        elif isinstance(f, C.Cmp) and f.op in _CMP:
            a, b = _term(f.left, cols, types), _term(f.right, cols, types)
            ta, tb = _type(a), _type(b)
            if ta == STRING or tb == STRING:
                if ta != tb or f.op not in ("=", "!=") or not (a[0] == "col" and b[0] == "const"):
                    raise _Unknown
            elif ta not in _NUMERIC or tb not in _NUMERIC or (DATE in (ta, tb) and ta != tb):
                raise _Unknown
            out.append(("cmp", f.op, a, b))
        else:
            raise _Unknown
    return cols, out


def _term(t, cols, types):
    match t:
        case C.Var(name, _):
            if name not in cols:
                raise _Unknown
            return ("col", cols[name], types[name].value)
        case C.Const(value, typ):
            if typ in (INT, DATE) and isinstance(value, int) and not isinstance(value, bool):
                return ("const", value, typ.value)
            if typ == FLOAT and isinstance(value, (int, float)) and not isinstance(value, bool):
                return ("const", float(value), typ.value)
            if typ == STRING and isinstance(value, str):
                return ("const", value, typ.value)
            raise _Unknown
        case C.Arith(op, args, typ):
            # float arithmetic only (integer arithmetic is overflow-checked natively)
            if typ != FLOAT or op not in ("+", "*", "-", "neg"):
                raise _Unknown
            inner = tuple(_term(a, cols, types) for a in args)
            if any(_type(a) not in (INT, FLOAT) for a in inner):
                raise _Unknown
            return ("arith", op, inner, FLOAT.value)
    raise _Unknown


def _type(t):
    from toaster.types import Type
    return Type(t[-1])


def columns_of(plan) -> set:
    """The batch column positions a plan reads."""
    out = set()

    def walk(t):
        if t[0] == "col":
            out.add(t[1])
        elif t[0] == "arith":
            for a in t[2]:
                walk(a)
    for _, _, keys, terms in plan:
        out.update(j for j, _ in keys)
        for factors in terms:
            for f in factors:
                for t in (f[1:] if f[0] == "val" else f[2:]):
                    walk(t)
    return out


# ------------------------------------------------------------------ executors
class _Overflow(Exception):
    """An integer sum that might pass 64 bits: the native path decides (and raises)."""


def run_plan(plan, table, signs: np.ndarray) -> dict:
    """temp -> (key columns, values) of its nonzero entries over one slice (`table`: the slice's
    Arrow table, columns c<position>), or None when an integer sum could overflow. Statements
    with the same keys and filters share one hash group-by (Q17's two sums per part key)."""
    cache: dict = {}
    shared: dict = {}
    out: dict = {}
    try:
        for target, vtype, keys, terms in plan:
            if len(terms) == 1:
                filters = tuple(sorted(repr(f) for f in terms[0] if f[0] == "cmp"))
                shared.setdefault((keys, filters), []).append((target, vtype, terms[0]))
                continue
            parts = [_term_rows(factors, table, signs, cache) for factors in terms]
            vals = [_term_values(vtype, factors, rows, table, signs, cache)
                    for factors, rows in zip(terms, parts)]
            key_cols = [_concat([_key_column(table, j, t, rows, cache) for rows in parts], t)
                        for j, t in keys]
            out.update(_group(keys, key_cols, [(target, np.concatenate(vals))]))
        for (keys, _), members in shared.items():
            rows = _term_rows(members[0][2], table, signs, cache)
            targets = [(target, _term_values(vtype, factors, rows, table, signs, cache))
                       for target, vtype, factors in members]
            key_cols = [_key_column(table, j, t, rows, cache) for j, t in keys]
            out.update(_group(keys, key_cols, targets))
    except _Overflow:
        return None
    return out


def _column(table, j, cache):
    if ("col", j) not in cache:
        cache[("col", j)] = table.column(f"c{j}").combine_chunks()
    return cache[("col", j)]


def _numeric(table, j, cache):
    key = ("np", j)
    if key not in cache:
        cache[key] = _column(table, j, cache).to_numpy(zero_copy_only=False)
    return cache[key]


def _eval(t, table, cache):
    kind = t[0]
    if kind == "col":
        return _numeric(table, t[1], cache)
    if kind == "const":
        return t[1]
    args = [_eval(a, table, cache) for a in t[2]]
    args = [np.asarray(a, np.float64) if isinstance(a, np.ndarray) else float(a) for a in args]
    op = t[1]
    if op == "neg":
        return -args[0]
    if op == "-":
        return args[0] - args[1]
    out = args[0]
    for a in args[1:]:
        out = out + a if op == "+" else out * a
    return out


def _mask(f, table, cache):
    import pyarrow as pa
    import pyarrow.compute as pc
    if ("mask", f) in cache:
        return cache[("mask", f)]
    _, op, a, b = f
    if _type(a) == STRING:
        col = _column(table, a[1], cache)
        if pa.types.is_dictionary(col.type):
            hit = pc.equal(col.dictionary, pa.scalar(b[1], col.dictionary.type)).to_numpy(zero_copy_only=False)
            m = hit[col.indices.to_numpy(zero_copy_only=False)]
        else:
            m = pc.equal(col, b[1]).to_numpy(zero_copy_only=False)
        m = m if op == "=" else ~m
    else:
        m = np.asarray(_CMP[op](_eval(a, table, cache), _eval(b, table, cache)), bool)
    cache[("mask", f)] = m
    return m


def _term_rows(factors, table, signs, cache):
    """The row positions a product's filters keep (None: every row)."""
    mask = None
    for f in factors:
        if f[0] == "cmp":
            m = _mask(f, table, cache)
            if np.ndim(m) == 0:
                m = np.full(len(signs), bool(m))
            mask = m if mask is None else mask & m
    return None if mask is None else np.flatnonzero(mask)


def _term_values(vtype, factors, rows, table, signs, cache):
    """Each kept row's contribution: its sign times the product's values."""
    integer = vtype == INT.value
    vals = signs.astype(np.int64) if integer else signs.astype(np.float64)
    if rows is not None:
        vals = vals[rows]
    bound, int_factors = None, 0
    for f in factors:
        if f[0] != "val":
            continue
        v = _eval(f[1], table, cache)
        if isinstance(v, np.ndarray) and rows is not None:
            v = v[rows]
        if _type(f[1]) == INT:
            int_factors += 1
            v = np.asarray(v, np.int64)
            mag = np.abs(np.asarray(v, np.float64))
            bound = mag if bound is None else bound * mag
        vals = vals * v
    # an integer product or sum the native code would check: decided there if it could overflow
    if bound is not None and (integer or int_factors > 1) and \
            float(np.sum(np.broadcast_to(bound, np.shape(vals)))) >= _LIMIT:     # a constant counts per row
        raise _Overflow
    if np.ndim(vals) == 0:
        vals = np.full(len(signs) if rows is None else len(rows), vals)
    return np.asarray(vals, np.int64 if integer else np.float64)


def _key_column(table, j, t, rows, cache):
    import pyarrow as pa
    if t == STRING.value:
        col = _column(table, j, cache)
        return col if rows is None else col.take(pa.array(rows))
    col = _numeric(table, j, cache)
    return col if rows is None else col[rows]


def _concat(parts, t):
    import pyarrow as pa
    if len(parts) == 1:
        return parts[0]
    if t == STRING.value:
        return pa.chunked_array([p.dictionary_decode() if pa.types.is_dictionary(p.type) else p
                                 for p in parts]).combine_chunks()
    return np.concatenate(parts)


def _group(keys, key_cols, targets):
    """One hash group-by of `key_cols` summing every target's values; each target's nonzero
    entries as (key columns, values)."""
    import pyarrow as pa
    if not keys:
        out = {}
        for target, vals in targets:
            total = vals.sum()
            out[target] = ([], np.array([total]) if total != 0 else vals[:0])
        return out
    cols = []
    for (j, t), col in zip(keys, key_cols):
        if t == STRING.value and pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        elif t == FLOAT.value:
            col = np.asarray(col, np.float64) + 0.0      # -0.0 is the key 0.0, as in the native maps
        cols.append(col)
    names = [f"k{i}" for i in range(len(cols))]
    vnames = [f"v{i}" for i in range(len(targets))]
    grouped = pa.table(cols + [v for _, v in targets], names=names + vnames) \
        .group_by(names, use_threads=False).aggregate([(v, "sum") for v in vnames])
    key_out = [grouped.column(n).to_numpy() for n in names]
    out = {}
    for (target, _), v in zip(targets, vnames):
        vals = grouped.column(f"{v}_sum").to_numpy()
        keep = vals != 0
        out[target] = ([c[keep] for c in key_out], vals[keep])
    return out
