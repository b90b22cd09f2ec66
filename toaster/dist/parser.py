"""Parse distributed M3 text (printer.print_dist's output) back to IR: parse_dist(text, file=None).

dist.lark extends the calculus / M3 grammar of toaster.calculus.parser with location tags,
transformers (Repart / Scatter / Gather / Broadcast), statement blocks and exchanges; variable types are
inferred as the M3 parser infers them (relation columns, map keys, lifts), with transformers
passed through. Self-contained apart from the calculus stage it extends.
"""
from __future__ import annotations

import os
from functools import lru_cache

from lark import Lark, Token
from lark.exceptions import UnexpectedInput

from toaster.calculus import ir as C
from toaster.calculus import parser as calc_parser
from toaster.m3.ir import Event, Statement
from toaster.errors import SemanticError, SqlSyntaxError, ToasterError
from toaster.schema import QueryResult, RelationDecl
from toaster.types import type_from_name
from toaster.dist.ir import (LOCAL, RANDOM, REPLICATED, Block, Broadcast, Dist, DistMap, DistProgram,
                             DistStatement, DistTrigger, Exchange, Gather, Repart, Scatter, strip_transformers)


class _Build(calc_parser._Build):
    """The calculus builder plus the distributed constructs."""

    def local_tag(self, c):
        return LOCAL

    def random_tag(self, c):
        return RANDOM

    def replicated_tag(self, c):
        return REPLICATED

    def dist_tag(self, c):
        return Dist(tuple(int(p) if p.type == "SIGNED_INT" else C.Var(str(p), None) for p in c if p is not None))

    def copy_of(self, c):
        return ("copy_of", str(c[0]))

    def dist_map(self, c):
        kind, name, rest = str(c[0]), str(c[1]), list(c[2:])
        copy = rest.pop()[1] if rest and isinstance(rest[-1], tuple) and rest[-1][:1] == ("copy_of",) else None
        keys = tuple(x for x in rest[:-2] if x is not None)
        return DistMap(name, keys, type_from_name(str(rest[-2])), rest[-1], "temp" if kind == "TEMP" else "view",
                       copy)

    def _vars(self, toks):
        return tuple(C.Var(str(t), None) for t in toks if t is not None)

    def repart(self, c):
        return Repart(self._vars(c[:-1]), c[-1])

    def scatter(self, c):
        return Scatter(self._vars(c[:-1]), c[-1])

    def gather(self, c):
        return Gather(c[0])

    def broadcast(self, c):
        return Broadcast(c[0])

    def dist_stmt(self, c):
        target, keys, op, rhs, loc = c[0], c[1:-3], c[-3], c[-2], c[-1]
        return ("stmt", Statement(str(target), self._vars(keys), str(op), rhs), loc, target)

    def exchange(self, c):
        return Exchange(str(c[1]).lower(), str(c[0]), str(c[-1]), tuple(int(p) for p in c[2:-1] if p is not None))

    def gather_exchange(self, c):
        return Exchange("gather", str(c[0]), str(c[1]))

    def broadcast_exchange(self, c):
        return Exchange("broadcast", str(c[0]), str(c[1]))

    def dblock(self, c):
        return ("block", str(c[0]), tuple(c[1:]))

    def dist_trigger(self, c):
        return ("trigger", c[0], tuple(c[1:]))

    def dist_program(self, c):
        return c


class _TypeEnv(calc_parser._TypeEnv):
    """Variable typing of the M3 parser, through transformers."""

    def collect(self, e):
        match e:
            case Repart(_, q) | Scatter(_, q) | Gather(q) | Broadcast(q):
                self.collect(q)
            case C.Lift(v, q) if not isinstance(q, C.Value):
                self.collect(q)
                self.bind(v.name, C.expr_type(strip_transformers(self.expr(q))))
            case _:
                super().collect(e)

    def expr(self, e):
        match e:
            case Repart(ps, q):
                return Repart(tuple(self.var(p) for p in ps), self.expr(q))
            case Scatter(ps, q):
                return Scatter(tuple(self.var(p) for p in ps), self.expr(q))
            case Gather(q):
                return Gather(self.expr(q))
            case Broadcast(q):
                return Broadcast(self.expr(q))
        return super().expr(e)

    def tag(self, t):
        if isinstance(t, Dist):
            return Dist(tuple(self.var(p) if isinstance(p, C.Var) else p for p in t.parts))
        return t


@lru_cache(maxsize=1)
def _parser() -> Lark:
    with open(os.path.join(os.path.dirname(__file__), "dist.lark")) as f:
        grammar = calc_parser._GRAMMAR + "\n" + f.read()
    return Lark(grammar, start="dist_program", parser="lalr", transformer=_Build(), maybe_placeholders=True,
                cache=True)     # LALR tables from lark's temp-file cache


def parse_dist(text: str, file: str | None = None) -> DistProgram:
    """Parse print_dist's text; errors are ToasterErrors at file:line:col."""
    try:
        items = _parser().parse(text)
    except UnexpectedInput as e:
        pos = getattr(e, "pos_in_stream", None)
        near = f" near {text[pos:pos + 20]!r}" if pos is not None else ""
        raise SqlSyntaxError(f"cannot parse distributed M3 text{near}", file=file,
                             line=getattr(e, "line", None), column=getattr(e, "column", None)) from None
    except ToasterError as e:  # raised while building nodes
        raise e.located(file) from None
    stage = str(items[0])
    relations = tuple(x for x in items if isinstance(x, RelationDecl))
    queries = tuple(x for x in items if isinstance(x, QueryResult))
    maps = tuple(x for x in items if isinstance(x, DistMap))
    rel_types = {r.name: r.types for r in relations}
    map_types = {m.name: (tuple(k.type for k in m.keys), m.type) for m in maps}
    triggers = []
    for _, event, raw_blocks in (x for x in items if isinstance(x, tuple) and x[0] == "trigger"):
        blocks = []
        for _, mode, raw_items in raw_blocks:
            out = []
            for it in raw_items:
                out.append(it if isinstance(it, Exchange) else _statement(it, event, rel_types, map_types, file))
            blocks.append(Block(mode, tuple(out)))
        triggers.append(DistTrigger(event, tuple(blocks)))
    return DistProgram(relations, maps, tuple(triggers), queries, stage)


def _statement(raw, event: Event, rel_types: dict, map_types: dict, file) -> DistStatement:
    _, st, loc, target = raw
    try:
        if st.target not in map_types:
            raise SemanticError(f"unknown map {st.target}", line=target.line, column=target.column)
        env = _TypeEnv(rel_types, map_types)
        for a in event.args:
            env.bind(a.name, a.type)
        for k, t in zip(st.keys, map_types[st.target][0]):
            env.bind(k.name, t)
        env.collect(st.rhs)
        stmt = Statement(st.target, tuple(env.var(k) for k in st.keys), st.op, env.expr(st.rhs))
        return DistStatement(stmt, env.tag(loc))
    except ToasterError as e:
        raise e.located(file, target.line, target.column) from None
