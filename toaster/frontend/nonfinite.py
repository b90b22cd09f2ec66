"""Infinities and NaN as DuckDB means them (pass `nonfinite_sums` of the sql stage).

An incremental sum cannot take back an infinity: after inserting inf and 2.0 and deleting the
inf, `inf + 2.0 - inf` is nan where re-evaluation gives 2.0. And DuckDB orders NaN above every
number and equal to itself, where native comparisons follow IEEE (false on NaN). So:

* **Sums.** A SUM (or AVG) of the query's own SELECT, HAVING or ORDER BY whose argument can be
  non-finite although every input value is finite -- a division by a value that can be 0, exp,
  pow, ln, log, sqrt, acos, asin, vector_angle, a cast of a string -- is kept as four sums: its
  finite part and the counts of its +inf, -inf and NaN values, combined when read
  (`nonfinite_sum`): NaN if some value is NaN or both infinities are there, else the infinity,
  else the finite sum. Every part retracts exactly.
* **MIN / MAX** of a value that can be NaN although the inputs are finite (0/0, sqrt(-1)): NaN
  rows count apart (`MAX` is NaN if there is one, `MIN` only if every value is NaN), the others
  are maintained as before.
* **Comparisons** of such a value go through `total_lt` / `total_le` / `total_eq` (DuckDB's
  order: NaN greatest, NaN = NaN).
* Such a SUM, AVG, MIN or MAX inside a subquery is refused (its value would feed further maps).
* **Inputs**: NaN is refused in every FLOAT column (toaster.runtime.checks), and an infinity in
  a FLOAT column whose values reach the argument of a sum that is not split, or a MIN/MAX
  argument or comparison operand that only an infinite input could make NaN (`a.PRICE -
  b.PRICE > 1000`: inf - inf) -- so such plans keep their native comparisons and indexes
  (`finite_columns`; the column's `finite` flag): readers and `Engine.apply` reject such a batch
  whole. A bare column compared or ranked (`b2.PRICE > b.PRICE`, `MAX(PRICE)`) takes infinities.

NaN as a GROUP BY or join key is one key on every engine (llvm's encode_key gives every NaN the
same bits). Not covered: overflow of finite values (1e308 * 10 is inf, as in DuckDB, but such an
infinity in a sum is not taken back). Splitting every sum of products or sums of floats would
cost every such SUM (TPC-H Q1's) three more maps, and would still miss a running total that
overflows (SUM(B) over 1e308 and 1e308 is inf; the finite part is itself such a total): only
sums whose arguments can be non-finite for a single row are split.
"""
from __future__ import annotations

from dataclasses import replace

from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.printer import print_expr
from toaster.frontend.traverse import _map, iter_nodes
from toaster.types import FLOAT, INT, STRING

INF, NAN = 1, 2          # what a value can be beyond a finite number (None: finite only)

# functions of finite arguments whose value can be NaN (and infinite)
_NAN_FUNCTIONS = {"pow", "ln", "log", "sqrt", "acos", "asin", "vector_angle",
                  "nonfinite_sum", "max_with_nans", "min_with_nans"}
# ... infinite, never NaN (NaN in: NaN out)
_INF_FUNCTIONS = {"exp", "nan_as_neginf", "nan_as_posinf"}
# NaN from an infinite argument
_TRIG = {"cos", "sin", "tan"}
# finite for finite arguments, infinite or NaN as their arguments are (overflow aside)
_SAME_FUNCTIONS = {"abs", "floor", "ceil", "listmin", "listmax", "radians", "degrees", "vec_length",
                   "dihedral_angle"}
# always finite (or not FLOAT)
_FINITE_FUNCTIONS = {"atan", "atan2", "cast_int", "date_part", "hash", "regexp_match", "like", "substring",
                     "cast_string", "cast_date", "finite_part", "is_posinf", "is_neginf", "is_nan",
                     "total_lt", "total_le", "total_eq"}


class _Statement:
    """One resolved statement: its derived tables (alias -> queries) and base relations."""

    def __init__(self, resolved):
        self.derived = {}
        for n in iter_nodes(resolved.select):
            if isinstance(n, A.SubqueryItem):
                self.derived.setdefault(n.alias, []).append(n.query)
        self.base = {}
        for alias, decl in resolved.relations:
            self.base.setdefault(alias, []).append(decl)
        self.finite_inputs = True      # kind(): input columns are finite (sums) or may be infinite

    def kind(self, e, depth: int = 0) -> int | None:
        """INF / NAN if e can be infinite / NaN (None: finite) -- inputs as `finite_inputs` says."""
        if depth > 50:
            return NAN
        if not isinstance(e, (A.AggCall, A.ScalarSubquery)) and getattr(e, "type", None) != FLOAT:
            return None
        k = lambda x: self.kind(x, depth + 1)
        match e:
            case A.BinaryOp(op="/", left=l, right=r):
                if isinstance(r, A.Literal) and r.value != 0:
                    return k(l)
                return NAN                        # 0/0
            case A.BinaryOp(op=op, left=l, right=r):
                a, b = k(l), k(r)
                if NAN in (a, b) or (a == INF and (b == INF or op == "*")) or (b == INF and op == "*"):
                    return NAN                    # inf - inf, inf * 0
                return a or b
            case A.Negate(arg=a):
                return k(a)
            case A.FuncCall(name=name, args=args):
                ks = [k(a) for a in args]
                worst = max((x for x in ks if x), default=None)
                if name in _FINITE_FUNCTIONS:
                    return None
                if name in _NAN_FUNCTIONS or (name == "cast_float" and args and args[0].type == STRING):
                    return NAN
                if name in _INF_FUNCTIONS:
                    return NAN if worst == NAN else INF
                if name in _TRIG:
                    return NAN if worst else None
                if name in _SAME_FUNCTIONS or name == "cast_float":
                    return worst
                return NAN                        # an external function
            case A.Case(whens=whens, else_=else_):
                values = [v for _, v in whens] + ([else_] if else_ is not None else [])
                return max((x for v in values if (x := k(v))), default=None)
            case A.AggCall(func="COUNT"):
                return None
            case A.AggCall(func=func, args=args):
                inner = max((x for a in args if (x := k(a))), default=None)
                return NAN if inner and func in ("SUM", "AVG") else inner
            case A.ScalarSubquery(query=q):
                return max((x for v in _target_exprs(q) if (x := k(v))), default=None)
            case A.ColumnRef(source=src, name=name) if src in self.derived and src not in self.base:
                return max((x for q in self.derived[src] for v in _target_exprs(q, name) if (x := k(v))),
                           default=None)
            case A.ColumnRef(source=src, name=name):
                if self.finite_inputs is True:
                    return None
                return None if any((d.name, name) in self.finite_inputs for d in self.base.get(src, ())) else INF
        return None

    def nan_from(self, e, finite: set) -> bool:
        """Whether e can be NaN although every input is finite (the caller then orders NaN as
        DuckDB does). Where e can be NaN only through an infinite input (`a.PRICE - b.PRICE`:
        inf - inf), those inputs refuse infinities instead (added to `finite`): the plan keeps
        its native comparison (and its range indexes)."""
        self.finite_inputs = True
        if self.kind(e) == NAN:
            return True
        self.finite_inputs = finite
        if self.kind(e) == NAN:
            self.summed_columns(e, finite)
        return False

    def summed_columns(self, e, out: set, depth: int = 0) -> None:
        """The (relation, column) of every FLOAT input column whose values reach e's value."""
        if depth > 50:
            return
        for n in iter_nodes(e, into_queries=False):
            if isinstance(n, A.ColumnRef) and n.type == FLOAT:
                if n.source in self.base:
                    out.update((d.name, n.name) for d in self.base[n.source])
                for q in self.derived.get(n.source, ()):
                    for v in _target_exprs(q, n.name):
                        self.summed_columns(v, out, depth + 1)
            elif isinstance(n, A.ScalarSubquery):
                for v in _target_exprs(n.query):
                    self.summed_columns(v, out, depth + 1)


def _target_exprs(q, name: str | None = None) -> list:
    """The target expressions of a Select (the one named `name` if given), of both operands of a
    SetOp."""
    if isinstance(q, A.SetOp):
        return _target_exprs(q.left, name) + _target_exprs(q.right, name)
    if not isinstance(q, A.Select):
        return []
    return [t.expr for t in q.targets if isinstance(t, A.Target) and (name is None or t.alias == name)]


# ------------------------------------------------------------------------ the rewrites

def _call(name: str, args, pos, t=FLOAT) -> A.FuncCall:
    return A.FuncCall(name, tuple(args), pos, t)


def _agg(func: str, arg, pos, t=FLOAT) -> A.AggCall:
    return A.AggCall(func, (arg,), False, pos, t)


def _split_aggregate(call: A.AggCall) -> A.FuncCall:
    """SUM(e) -> nonfinite_sum(SUM(finite part), SUM(+inf count), SUM(-inf count), SUM(NaN count)),
    AVG(e) the same with COUNT(e) as a fifth argument; MAX(e) -> max_with_nans(MAX(e, NaN as
    -inf), SUM(NaN count)); MIN(e) -> min_with_nans(MIN(e, NaN as +inf), SUM(NaN count), COUNT(e))."""
    (e,) = call.args
    pos = call.pos
    nans = _agg("SUM", _call("is_nan", (e,), pos), pos)
    if call.func == "MAX":
        return _call("max_with_nans", (_agg("MAX", _call("nan_as_neginf", (e,), pos), pos), nans), pos)
    if call.func == "MIN":
        return _call("min_with_nans", (_agg("MIN", _call("nan_as_posinf", (e,), pos), pos), nans,
                                       _agg("COUNT", e, pos, INT)), pos)
    parts = [_agg("SUM", _call(f, (e,), pos), pos) for f in ("finite_part", "is_posinf", "is_neginf")]
    parts.append(nans)
    if call.func == "AVG":
        parts.append(_agg("COUNT", e, pos, INT))
    return _call("nonfinite_sum", parts, pos)


_TOTAL = {"<": ("total_lt", False), ">": ("total_lt", True), "<=": ("total_le", False),
          ">=": ("total_le", True), "=": ("total_eq", False), "!=": ("total_eq", False)}


def _total_order(c: A.Comparison) -> A.Comparison:
    """a OP b in DuckDB's order of doubles (NaN greatest, NaN = NaN): total_OP(a, b) = 1."""
    name, swap = _TOTAL[c.op]
    a, b = (c.right, c.left) if swap else (c.left, c.right)
    one = A.Literal(0 if c.op == "!=" else 1, INT, c.pos)
    return A.Comparison("=", _call(name, (a, b), c.pos), one, c.pos)


def _refuse(call: A.AggCall, what: str, where: str) -> UnsupportedError:
    return UnsupportedError(f"{call.func} over a value that can be {what} {where}",
                            line=call.pos.line or None, column=call.pos.column or None)


def split_statement(resolved):
    """(the resolved statement rewritten as the module docstring says, the FLOAT input columns
    that must stay finite as a set of (relation, column), notes for --explain)."""
    st = _Statement(resolved)
    q = resolved.select
    own = set()
    if isinstance(q, A.Select):
        exprs = [t.expr for t in q.targets if isinstance(t, A.Target)] + [q.having] + [o.expr for o in q.order_by]
        own = {id(n) for e in exprs if e is not None for n in iter_nodes(e, into_queries=False)
               if isinstance(n, A.AggCall)}
    split, finite = set(), set()
    for n in iter_nodes(q):          # sums first: they say which inputs stay finite
        if not (isinstance(n, A.AggCall) and n.func in ("SUM", "AVG") and n.args):
            continue
        what = st.kind(n.args[0])
        if what is None:
            st.summed_columns(n.args[0], finite)
        elif id(n) not in own:
            raise _refuse(n, "infinite or NaN (a division by a value that can be 0, or a function like "
                          "sqrt or ln)", "inside a subquery: an incremental sum cannot take back an "
                          "infinity, and toaster splits such sums only in a query's own SELECT, HAVING "
                          "or ORDER BY")
        elif n.distinct:
            raise _refuse(n, "infinite or NaN", "with DISTINCT")
        else:
            split.add(n)
    for n in iter_nodes(q):          # MIN/MAX and comparisons: other inputs may be infinite
        if isinstance(n, A.AggCall) and n.func in ("MIN", "MAX") and n.args and st.nan_from(n.args[0], finite):
            if id(n) not in own or n.distinct:
                raise _refuse(n, "NaN (DuckDB orders NaN above every number)",
                              "inside a subquery or with DISTINCT (toaster orders NaN so only in a "
                              "query's own SELECT, HAVING or ORDER BY)")
            split.add(n)

    # aggregates first (a rewritten comparison inside one would make it another node), then
    # the comparisons, which see the split aggregates' values
    aggregates = lambda n: _split_aggregate(n) if isinstance(n, A.AggCall) and n in split else n
    compares = lambda n: _total_order(n) if isinstance(n, A.Comparison) and (
        st.nan_from(n.left, finite) or st.nan_from(n.right, finite)) else n
    rewrite = lambda e: None if e is None else _map(_map(e, aggregates), compares)
    new = rewrite(q)
    if new == q:
        return resolved, finite, []

    notes = [f"{resolved.name}: {n.func}({print_expr(n.args[0])}) can be infinite or NaN: "
             + ("kept as its finite part and counts of +inf, -inf and NaN" if n.func in ("SUM", "AVG")
                else "NaN rows counted apart (DuckDB orders NaN above every number)") for n in split]
    if any(isinstance(a, A.Comparison) and isinstance(a.left, A.FuncCall) and a.left.name.startswith("total_")
           for a in iter_nodes(new)):
        notes.append(f"{resolved.name}: comparisons of values that can be NaN in DuckDB's order (total_lt/le/eq)")
    keys = tuple((name, rewrite(e)) for name, e in resolved.key_columns)
    values = tuple((name, rewrite(e)) for name, e in resolved.value_columns)
    return replace(resolved, select=new, key_columns=keys, value_columns=values), finite, sorted(notes)
