"""Passes of the `calc` stage: the lowering from resolved SQL, and simplification of query maps."""
from __future__ import annotations

from dataclasses import replace

from toaster.passes import Options, pass_


@pass_("sql_to_calc", "sql", "calc", description="resolved SQL -> AGCA query maps")
def sql_to_calc(ir, options: Options):
    from toaster.calculus.sql_results import sql_to_calc as lower
    return lower(ir.program.relations, ir.queries, getattr(ir.program, "functions", ()))


@pass_("simplify_calc", "calc", description="unification, partial evaluation, expansion of query maps")
def simplify_calc(ir, options: Options):
    from toaster.calculus.ir import AggSum, mk_sum
    from toaster.calculus.simplify import simplify_monomials
    maps = []
    for m in ir.maps:
        body = m.definition.expr if isinstance(m.definition, AggSum) else m.definition
        monos = simplify_monomials(body, set(m.keys), bound=set())   # a query map's keys are its outputs
        maps.append(replace(m, definition=AggSum(m.keys, mk_sum([x.to_expr() for x in monos]))))
    return replace(ir, maps=tuple(maps))
