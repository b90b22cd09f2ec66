"""Parse K3 program text (toaster.k3.printer's output) back to IR: parse_k3(text, file=None).

The grammar is k3.lark (LALR). Types the text leaves out are recovered as the printer infers
them: a variable from the lambda, let or trigger parameter that binds it, a lookup or slice
from its map declaration, `(a op b)` from its operands (k3.printer.binop_type); an ascription
`(e :: t)` overrides. The header's relation and result declarations are M3 text, parsed by
toaster.calculus.parser. Helpers shared with the imperative and distributed parsers live here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from functools import lru_cache

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from toaster.calculus import ir as C
from toaster.calculus.maps import Event
from toaster.m3.parser import parse_m3
from toaster.errors import SemanticError, SqlSyntaxError, ToasterError
from toaster.k3 import ir as K
from toaster.k3.printer import binop_type
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, Type, date_to_int


# ------------------------------------------------------------ shared helpers

@dataclass(frozen=True, slots=True)
class Unresolved:
    """Placeholder type of a node whose type is inferred after parsing (keeps its position)."""
    line: int | None = None
    column: int | None = None


UNRESOLVED = Unresolved()


def load_grammar(path: str, start: str = "program", transformer=None) -> Lark:
    with open(path) as f:
        return Lark(f.read(), start=start, parser="lalr", transformer=transformer, maybe_placeholders=True,
                    cache=True)     # LALR tables from lark's temp-file cache


def syntax_error(e: UnexpectedInput, text: str, what: str, file: str | None) -> SqlSyntaxError:
    """A one-line error at the offending token: `file:line:col: syntax error: ...`."""
    pos = getattr(e, "pos_in_stream", None)
    near = f" near {text[pos:pos + 20]!r}" if pos is not None else ""
    return SqlSyntaxError(f"cannot parse {what} text{near}", file=file,
                          line=getattr(e, "line", None), column=getattr(e, "column", None))


def run_parser(parser: Lark, text: str, what: str, file: str | None):
    """parser.parse(text) with lark's errors (and errors raised while building) as ToasterErrors."""
    try:
        return parser.parse(text)
    except UnexpectedInput as e:
        raise syntax_error(e, text, what, file) from None
    except ToasterError as e:  # raised while building nodes
        raise e.located(file) from None


def parse_m3_decls(tokens, file: str | None) -> tuple[tuple, tuple]:
    """(relations, queries) of CREATE / DECLARE RESULT declarations, each an M3_DECL token.

    They are parsed as one M3 text in which each token keeps its line and column, so the M3
    parser's error positions are positions in the whole file."""
    parts, line, col = [], 1, 1
    for tok in tokens:
        if tok.line > line:
            parts.append("\n" * (tok.line - line))
            line, col = tok.line, 1
        parts.append(" " * max(tok.column - col, 0) + str(tok))
        text = str(tok)
        line += text.count("\n")
        col = (len(text) - text.rfind("\n")) if "\n" in text else max(tok.column, col) + len(text)
    if not parts:
        return (), ()
    try:
        m3 = parse_m3("".join(parts))
    except ToasterError as e:
        raise e.located(file) from None
    return m3.relations, m3.queries


def tuple_event(sign: str, relation: str, args) -> Event:
    return Event("insert" if sign == "+" else "delete", relation, tuple(args))


def event_args(event: Event, params) -> Event:
    """A tuple event printed without arguments takes the trigger's parameters."""
    if event.kind in ("insert", "delete") and event.args is None:
        return Event(event.kind, event.relation, tuple(C.Var(p.name, p.type) for p in params))
    return event


def literal(kind: str, tok):
    """The (value, type) of a literal token of kind int / float / string / date / date_int / bool."""
    s = str(tok)
    match kind:
        case "int":
            return int(s), INT
        case "float":
            return float(s), FLOAT
        case "string":
            return s[1:-1].replace("''", "'"), STRING
        case "date":
            try:
                return date_to_int(s[1:-1]), DATE
            except ValueError as e:
                raise SemanticError(str(e), line=tok.line, column=tok.column) from None
        case "date_int":
            return int(s), DATE
    raise ValueError(kind)


def scalar_type(tok) -> Type:
    return Type(str(tok))


class KeywordRules:
    """Callbacks of the `!rule: "kw" | ...` rules shared by the grammars: the keyword's text."""

    def mode(self, c):
        return str(c[0])

    role = kind = sign = binop = mode

    def scalar(self, c):
        return Type(str(c[0]))


def _items(c) -> tuple:
    return tuple(x for x in c if x is not None)


# ------------------------------------------------------------------- builder

class _Build(KeywordRules, Transformer):
    """Builds K3 nodes bottom-up; variable, lookup and binop types are left Unresolved."""

    # types
    def scalar_type(self, c):
        return c[0]

    def tuple_type(self, c):
        return K.TupleType(_items(c))

    def coll_type(self, c):
        return K.CollType(c[0])

    def param(self, c):
        return K.Var(str(c[0]), c[1])

    def binding(self, c):
        return (K.Var(str(c[0]), c[1]), c[2])

    def fn(self, c):
        return K.Lambda(_items(c[:-1]), c[-1])

    # literals
    def int_c(self, c):
        return K.Const(*literal("int", c[0]))

    def float_c(self, c):
        return K.Const(*literal("float", c[0]))

    def string_c(self, c):
        return K.Const(*literal("string", c[0]))

    def date_c(self, c):
        return K.Const(*literal("date", c[0]))

    def date_int_c(self, c):
        return K.Const(*literal("date_int", c[0]))

    def true_c(self, c):
        return K.Const(True, BOOL)

    def false_c(self, c):
        return K.Const(False, BOOL)

    # scalars
    def var_e(self, c):
        return K.Var(str(c[0]), Unresolved(c[0].line, c[0].column))

    def lookup_e(self, c):
        return K.Lookup(str(c[0]), _items(c[1:]), Unresolved(c[0].line, c[0].column))

    def call_e(self, c):
        return K.Call(str(c[0]), _items(c[2:]), c[1])

    def cast_e(self, c):
        return K.Cast(c[0], c[1])

    def binop_e(self, c):
        return K.BinOp(str(c[1]), c[0], c[2], UNRESOLVED)

    def not_e(self, c):
        return K.Not(c[0])

    def project_e(self, c):
        return K.Project(c[0], int(c[1]))

    def group_e(self, c):
        return c[0]

    def ascribe_e(self, c):
        e, t = c
        if isinstance(e, (K.Var, K.BinOp, K.Lookup, K.Call, K.Const, K.Cast)):
            return _with_type(e, t)
        raise SemanticError(f"cannot ascribe a type to {type(e).__name__}")

    def unit_e(self, c):
        return K.Tuple(())

    def tuple1_e(self, c):
        return K.Tuple((c[0],))

    def tuple_e(self, c):
        return K.Tuple(tuple(c))

    # collections
    def empty_e(self, c):
        return K.Empty(c[0])

    def singleton_e(self, c):
        return K.Singleton(c[0])

    def union_e(self, c):
        return K.Union(tuple(c))

    def any_pat(self, c):
        return _ANY

    def slice_e(self, c):
        name, rest = c[0], c[1:]
        t = rest[-1]
        pats = tuple(None if p is _ANY else p for p in rest[:-1] if p is not None)
        if t is None:
            return K.Slice(str(name), pats, Unresolved(name.line, name.column), UNRESOLVED)
        if not (isinstance(t, K.CollType) and isinstance(t.elem, K.TupleType) and t.elem.elems):
            raise SemanticError(f"slice of {name} ascribed a type that is not a bag of tuples: {t}")
        return K.Slice(str(name), pats, t.elem.elems[:-1], t.elem.elems[-1])

    def map_e(self, c):
        return K.Map(c[0], c[1])

    def filter_e(self, c):
        return K.Filter(c[0], c[1])

    def flatten_e(self, c):
        return K.Flatten(c[0])

    def aggregate_e(self, c):
        init, fn, coll = c[0], c[-2], c[-1]
        return K.Aggregate(fn, init, coll)

    def group_by_e(self, c):
        g, init, fn, coll = c[0], c[1], c[-2], c[-1]
        return K.GroupByAggregate(g, fn, init, coll)

    def if_e(self, c):
        return K.IfThenElse(c[0], c[1], K.Block(()) if c[2] is None else c[2])

    def let_e(self, c):
        binds, body = c[:-1], c[-1]
        return K.Apply(K.Lambda(tuple(p for p, _ in binds), body), tuple(a for _, a in binds))

    def apply_e(self, c):
        return K.Apply(c[0], _items(c[1:]))

    # statements
    def iterate_e(self, c):
        return K.Iterate(c[0], c[1])

    def update_e(self, c):
        return K.Update(str(c[0]), _items(c[1:-1]), c[-1])

    def replace_e(self, c):
        return K.Replace(str(c[0]), c[1])

    def clear_e(self, c):
        return K.Clear(str(c[0]))

    def block_e(self, c):
        return K.Block(tuple(c))

    # program
    def m3_decl(self, c):
        return c[0]

    def map_decl(self, c):
        role = "aux" if c[0] is None else str(c[0])
        return K.K3Map(str(c[2]), _items(c[3:-1]), c[-1], str(c[1]), role)

    def event_args(self, c):
        return tuple(C.Var(p.name, p.type) for p in _items(c))

    def tuple_event(self, c):
        return Event("insert" if str(c[0]) == "+" else "delete", str(c[1]), c[2])

    def batch_event(self, c):
        return Event("batch", str(c[0]), ())

    def ready_event(self, c):
        return Event("ready", "", ())

    def trigger(self, c):
        name = str(c[0])
        ev_i = next(i for i, x in enumerate(c) if isinstance(x, Event))
        params = _items(c[1:ev_i])
        return K.K3Trigger(name, event_args(c[ev_i], params), params, tuple(c[ev_i + 1:]))

    def program(self, c):
        return c


_ANY = object()


def _with_type(e, t):
    match e:
        case K.Var(n, _):
            return K.Var(n, t)
        case K.BinOp(op, a, b, _):
            return K.BinOp(op, a, b, t)
        case K.Lookup(m, keys, _):
            return K.Lookup(m, keys, t)
        case K.Call(n, args, _):
            return K.Call(n, args, t)
        case K.Const(v, _):
            return K.Const(v, t)
        case K.Cast(_, a):
            return K.Cast(t, a)
    raise TypeError(e)


# ------------------------------------------------------------------ typing

_FIELDS: dict = {}


def _field_names(cls) -> tuple:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


_NODES = (K.Var, K.Const, K.BinOp, K.Not, K.Cast, K.Call, K.Lookup, K.Tuple, K.Project, K.Lambda, K.Apply,
          K.IfThenElse, K.Empty, K.Singleton, K.Union, K.Slice, K.Map, K.Filter, K.Flatten, K.Aggregate,
          K.GroupByAggregate, K.Iterate, K.Update, K.Replace, K.Clear, K.Block)


class _Resolver:
    """Fills in Unresolved types top-down, with the variables in scope."""

    def __init__(self, maps: dict):
        self.maps = maps  # name -> K3Map

    def map(self, name: str, where: Unresolved) -> K.K3Map:
        m = self.maps.get(name)
        if m is None:
            raise SemanticError(f"unknown map {name}", line=where.line, column=where.column)
        return m

    def expr(self, e, env: dict):
        match e:
            case K.Var(n, t):
                if not isinstance(t, Unresolved):
                    return e
                if n not in env:
                    raise SemanticError(f"unknown variable {n}", line=t.line, column=t.column)
                return K.Var(n, env[n])
            case K.Const() | K.Empty() | K.Clear():
                return e
            case K.Lambda(ps, body):
                return K.Lambda(ps, self.expr(body, env | {p.name: p.type for p in ps}))
            case K.BinOp(op, a, b, t):
                a, b = self.expr(a, env), self.expr(b, env)
                if isinstance(t, Unresolved):
                    t = binop_type(op, K.type_of(a), K.type_of(b))
                return K.BinOp(op, a, b, t)
            case K.Lookup(m, keys, t):
                if isinstance(t, Unresolved):
                    t = self.map(m, t).value_type
                return K.Lookup(m, tuple(self.expr(k, env) for k in keys), t)
            case K.Slice(m, pat, kts, vt):
                if isinstance(kts, Unresolved):
                    decl = self.map(m, kts)
                    kts, vt = decl.key_types, decl.value_type
                return K.Slice(m, tuple(None if p is None else self.expr(p, env) for p in pat), kts, vt)
        values = []
        for name in _field_names(type(e)):
            v = getattr(e, name)
            if isinstance(v, _NODES):
                v = self.expr(v, env)
            elif isinstance(v, tuple):
                v = tuple(self.expr(x, env) if isinstance(x, _NODES) else x for x in v)
            values.append(v)
        return type(e)(*values)


# ------------------------------------------------------------------ entry points

_HERE = os.path.dirname(__file__)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return load_grammar(os.path.join(_HERE, "k3.lark"), transformer=_Build())


def parse_k3(text: str, file: str | None = None) -> K.K3Program:
    """Parse print_k3's text; errors are ToasterErrors at file:line:col."""
    items = run_parser(_parser(), text, "K3", file)
    mode = str(items[0])
    decls = [x for x in items[1:] if isinstance(x, Token)]
    maps = tuple(x for x in items if isinstance(x, K.K3Map))
    triggers = [x for x in items if isinstance(x, K.K3Trigger)]
    relations, queries = parse_m3_decls(decls, file)
    resolver = _Resolver({m.name: m for m in maps})
    out = []
    for t in triggers:
        env = {p.name: p.type for p in t.params}
        try:
            body = tuple(resolver.expr(s, env) for s in t.body)
        except ToasterError as e:
            raise e.located(file) from None
        out.append(K.K3Trigger(t.name, t.event, t.params, body))
    return K.K3Program(relations, maps, tuple(out), queries, mode)
