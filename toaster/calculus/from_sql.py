"""Lowering `sql_to_calc`: resolved SELECTs -> AGCA query maps (VLDBJ'14 §3.2).

Each FROM item becomes a relation atom over fresh variables named ALIAS_COLUMN, WHERE
conjuncts become comparisons (equalities are later unified away), and each aggregate target
becomes one map  NAME[keys] := AggSum([keys], atoms * conditions * aggregated value).
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, Prod, Rel, Value, Var, expr_type,
                                 mk_prod, ONE, ZERO)
from toaster.calculus.m3 import MapDecl
from toaster.errors import UnsupportedError
from toaster.frontend import ast as A
from toaster.frontend.resolve import ResolvedQuery
from toaster.schema import QueryResult, ResultColumn
from toaster.types import INT, FLOAT


@dataclass(frozen=True)
class CalcProgram:
    """The `calc` stage: relation declarations, query maps and result shapes."""
    relations: tuple     # tuple[RelationDecl]
    maps: tuple          # tuple[MapDecl] (role 'query')
    queries: tuple       # tuple[QueryResult]


def column_var(ref: A.ColumnRef) -> Var:
    return Var(f"{ref.source}_{ref.name}", ref.type)


def sql_term(e):
    """SQL scalar expression -> calculus value term."""
    match e:
        case A.Literal(v, t):
            return Const(v, t)
        case A.ColumnRef():
            return column_var(e)
        case A.BinaryOp(op, l, r, _, t):
            return Arith(op, (sql_term(l), sql_term(r)), t)
        case A.Negate(a, _, t):
            return Arith("neg", (sql_term(a),), t)
    raise UnsupportedError(f"expression {type(e).__name__}",
                           line=getattr(getattr(e, "pos", None), "line", None))


def _value_factors(e) -> list:
    """Split a product into separate Value factors so that decomposition can place them."""
    if isinstance(e, A.BinaryOp) and e.op == "*":
        return _value_factors(e.left) + _value_factors(e.right)
    if isinstance(e, A.Literal) and e.value == 1:
        return []
    return [Value(sql_term(e))]


def _cond_factors(c) -> list:
    match c:
        case None:
            return []
        case A.Comparison(op, l, r):
            return [Cmp(op, sql_term(l), sql_term(r))]
        case A.And(args):
            out = []
            for a in args:
                out.extend(_cond_factors(a))
            return out
        case A.BoolConst(v):
            return [] if v else [ZERO]
    raise UnsupportedError(f"condition {type(c).__name__}")


def query_to_calc(q: ResolvedQuery) -> tuple[list, QueryResult]:
    sel = q.select
    atoms = []
    for alias, decl in q.aliases:
        atoms.append(Rel(decl.name, tuple(Var(f"{alias}_{c.name}", c.type) for c in decl.columns)))
    conds = _cond_factors(sel.where)
    keys = tuple(column_var(c) for _, c in q.key_columns)
    maps, value_cols = [], []
    for name, agg in q.value_columns:
        if agg is None or agg.func == "COUNT":
            value = []
        elif agg.func == "SUM":
            value = _value_factors(agg.args[0])
        else:
            raise UnsupportedError(f"{agg.func} aggregate", line=agg.pos.line, column=agg.pos.column)
        body = mk_prod(atoms + conds + value)
        t = expr_type(body)
        maps.append(MapDecl(name, keys, t, AggSum(keys, body), role="query"))
        value_cols.append(ResultColumn(name, t))
    key_cols = tuple(ResultColumn(n, c.type) for n, c in q.key_columns)
    result = QueryResult(q.name, key_cols, tuple(value_cols), tuple(m.name for m in maps))
    return maps, result


def sql_to_calc(relations, queries) -> CalcProgram:
    maps, results = [], []
    for q in queries:
        ms, r = query_to_calc(q)
        maps.extend(ms)
        results.append(r)
    return CalcProgram(tuple(relations), tuple(maps), tuple(results))
