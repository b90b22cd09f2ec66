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


@pass_("parse_sql", "sql", description="SQL text -> AST (lark grammar)", skippable=False,
       why_required="every later pass reads the AST it builds")
def parse_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.parser import parse_sql as parse
    return replace(ir, program=parse(ir.text, options.source_file, options.base_dir))


@pass_("resolve_sql", "sql", description="name resolution, types, result naming", skippable=False,
       why_required="the lowering to the calculus needs resolved names and types")
def resolve_sql(ir: SqlStage, options: Options) -> SqlStage:
    from toaster.frontend.resolve import resolve_program
    return replace(ir, queries=resolve_program(ir.program))


def print_sql_stage(ir: SqlStage) -> str:
    from toaster.frontend.printer import print_sql_program
    if ir.queries is None:
        return ir.text
    return print_sql_program(ir.program.relations, ir.queries)
