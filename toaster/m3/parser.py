"""Parse M3 program text (the printer's output) back to the IR; the grammar is the calculus
program grammar of toaster.calculus.parser, whose `trigger` items this module types."""
from __future__ import annotations

from lark.exceptions import UnexpectedInput

from toaster.calculus.parser import _Build, _TypeEnv, _parser, _rel_types, _syntax
from toaster.errors import SemanticError
from toaster.m3.ir import M3Program, MapDecl, Statement, Trigger
from toaster.schema import QueryResult, RelationDecl


def parse_m3(text: str) -> M3Program:
    try:
        tree = _parser("program").parse(text)
    except UnexpectedInput as e:
        raise _syntax(e, text) from None
    items = _Build().transform(tree)
    mode = "batch" if "(mode: batch)" in text.split("\n", 1)[0] else "tuple"
    relations, raw_maps, queries, raw_triggers = [], [], [], []
    for it in items:
        if isinstance(it, RelationDecl):
            relations.append(it)
        elif isinstance(it, QueryResult):
            queries.append(it)
        elif it[0] == "map":
            raw_maps.append(it)
        elif it[0] == "trigger":
            raw_triggers.append(it)
    rel_types = _rel_types(relations)
    map_types = {m[1]: (tuple(k.type for k in m[2]), m[3]) for m in raw_maps}
    maps = []
    for _, name, keys, vtype, definition, role in raw_maps:
        env = _TypeEnv(rel_types, map_types)
        for k in keys:
            env.bind(k.name, k.type)
        env.collect(definition)
        maps.append(MapDecl(name, keys, vtype, env.expr(definition), role))
    triggers = []
    for _, event, stmts in raw_triggers:
        out = []
        for _, target, keys, op, rhs in stmts:
            env = _TypeEnv(rel_types, map_types)
            for a in event.args:
                env.bind(a.name, a.type)
            if target not in map_types:
                raise SemanticError(f"unknown map {target}")
            for k, t in zip(keys, map_types[target][0]):
                env.bind(k.name, t)
            env.collect(rhs)
            out.append(Statement(target, tuple(env.var(k) for k in keys), op, env.expr(rhs)))
        triggers.append(Trigger(event, tuple(out)))
    return M3Program(tuple(relations), tuple(maps), tuple(triggers), tuple(queries), mode)
