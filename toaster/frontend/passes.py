"""Passes of the `sql` stage: parsing and name resolution."""
from __future__ import annotations

from dataclasses import dataclass, replace

from toaster.passes import Options, pass_


@dataclass(frozen=True)
class SqlStage:
    """The `sql` stage: the program text, its AST, and (after resolution) typed queries."""
    text: str
    program: object = None       # frontend.ast.SqlProgram
    queries: tuple | None = None  # tuple[ResolvedQuery]
    resolved: tuple | None = None  # the queries as resolved, before rewrites (the oracle's SQL)
    finite_columns: frozenset = frozenset()  # (relation, column): FLOAT inputs that must stay finite
    notes: tuple = ()             # decisions, for --explain


@pass_("parse_sql", "sql", description="SQL text -> AST (lark grammar)", skippable=False,
       why_required="every later pass reads the AST it builds")
def parse_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.parser import parse_sql as parse
    return replace(ir, program=parse(ir.text, options.source_file, options.base_dir))


@pass_("resolve_sql", "sql", description="name resolution, types, result naming", skippable=False,
       why_required="the lowering to the calculus needs resolved names and types")
def resolve_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.resolve import resolve_program
    queries = resolve_program(ir.program)
    return replace(ir, queries=queries, resolved=queries)


@pass_("nonfinite_sums", "sql",
       description="sums that can be infinite or NaN kept as a finite part and counts (retractable)")
def nonfinite_sums(ir: SqlStage, options: Options) -> SqlStage:
    """An incremental sum cannot take back an infinity (inf + 2.0 - inf is nan): see
    toaster/frontend/nonfinite.py."""
    from toaster.errors import UnsupportedError
    from toaster.frontend.nonfinite import split_statement
    queries, finite, notes = [], set(ir.finite_columns), list(ir.notes)
    for q in ir.queries:
        try:
            q, columns, said = split_statement(q)
        except UnsupportedError as e:
            raise e.located(ir.program.file) from None
        queries.append(q)
        finite |= columns
        notes += said
    relations = tuple(replace(d, columns=tuple(replace(c, finite=True) if (d.name, c.name) in finite else c
                                               for c in d.columns)) for d in ir.program.relations)
    if finite:
        notes.append("inputs refusing infinities (their values reach a sum that cannot take one back): "
                     + ", ".join(f"{r}.{c}" for r, c in sorted(finite)))
    return replace(ir, queries=tuple(queries), finite_columns=frozenset(finite), notes=tuple(notes),
                   program=replace(ir.program, relations=relations))


def print_sql_stage(ir: SqlStage) -> str:
    from toaster.frontend.printer import print_sql_program
    if ir.queries is None:
        return ir.text
    return print_sql_program(ir.program.relations, ir.queries)
