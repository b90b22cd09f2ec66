"""Parse the text of calculus expressions and M3 programs (the printer's output) back to IR.

Variable types are not printed inside expressions; they are inferred from the positions where
variables are bound: relation and delta atoms (declared column types), map references (declared
key types), lifts (the lifted expression's type), trigger arguments and map keys.
"""
from __future__ import annotations

from functools import lru_cache

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Extremum, Func, Lift, MapRef, Prod, Rel,
                                 Sum, Value, Var, expr_type)
from toaster.calculus.maps import Event, MapDecl
from toaster.calculus.results import KLEENE_OR, GlobalValue, KeyRef, MapReduce, MapValue, TopValue
from toaster.errors import SqlSyntaxError, SemanticError
from toaster.schema import Column, QueryResult, RelationDecl, ResultColumn, Source, physical_columns
from toaster.types import BOOL, DATE, FLOAT, INT, STRING, Type, date_to_int, type_from_name

_GRAMMAR = r"""
program: item*
?item: relation | map_decl | result_decl | trigger
relation: "CREATE" KIND NAME "(" col ("," col)* ")" source? ";"
KIND: "STREAM" | "TABLE"
col: NAME TYPE NULLABLE?
NULLABLE: "NULL"
source: "FROM" "FILE" STRING "LINE" "DELIMITED" NAME "(" [param ("," param)*] ")"
param: NAME ":=" STRING
map_decl: "DECLARE" QROLE? "MAP" NAME "[" [tvar ("," tvar)*] "]" ":" TYPE ":=" expr ";"
QROLE: "QUERY"
result_decl: "DECLARE" "RESULT" NAME "KEYS" "(" [rcol ("," rcol)*] ")" "VALUES" "(" [vcol ("," vcol)*] ")" rextra* ";"
rcol: NAME ":" TYPE
vcol: NAME ":" TYPE "FROM" NAME
    | NAME ":" TYPE ":=" rterm            -> vterm
?rterm: term | expr
rextra: "READS" "(" NAME ("," NAME)* ")"  -> reads
      | "GROUPS" NAME                       -> groups
      | "HAVING" rterm                      -> having
      | "ORDER" "BY" oitem ("," oitem)*     -> order
      | "LIMIT" SIGNED_INT                  -> limit
      | "CHECK" NAME STRING                 -> check
      | "NULLFLAG" SIGNED_INT SIGNED_INT    -> nullflag
oitem: rterm DESC?
top_item: "@" SIGNED_INT DESC? ("NULL" "@" SIGNED_INT)?
DESC: "DESC"
trigger: "ON" event "{" statement* "}"
event: SIGN NAME "(" [tvar ("," tvar)*] ")"   -> tuple_event
     | "BATCH" NAME                             -> batch_event
     | "SYSTEM" "READY"                         -> ready_event
SIGN: "+" | "-"
statement: NAME "[" [NAME ("," NAME)*] "]" ASSIGN_OP expr ";"
ASSIGN_OP: "+=" | ":="
tvar: NAME ":" TYPE

start_expr: expr
?expr: NAME "(" [NAME ("," NAME)*] ")"                 -> rel
     | "(" "DELTA" NAME ")" "(" [NAME ("," NAME)*] ")"  -> delta_rel
     | NAME "[" [NAME ("," NAME)*] "]"                  -> map_ref
     | "{" term "}"                                     -> value
     | "{" term CMP term "}"                            -> cmp
     | "(" NAME "^=" expr ")"                           -> lift
     | "(" expr ("+" expr)+ ")"                         -> sum
     | "(" expr ("*" expr)+ ")"                         -> prod
     | "AggSum" "(" "[" [NAME ("," NAME)*] "]" "," expr ")" -> aggsum
     | EXT_KIND "(" "[" [NAME ("," NAME)*] "]" "," term "," expr ")" -> extremum
EXT_KIND: "AggMin" | "AggMax"
CMP: "<=" | ">=" | "!=" | "=" | "<" | ">"

?term: sum_t
?sum_t: prod_t | sum_t ADD prod_t -> arith
?prod_t: un_t | prod_t MUL un_t -> arith
?un_t: "-" "(" term ")" -> neg | atom_t
ADD: "+" | "-"
MUL: "*" | "/"
?atom_t: NAME -> var
       | SIGNED_INT -> int_c
       | SIGNED_FLOAT -> float_c
       | STRING -> string_c
       | "DATE" "(" STRING ")" -> date_c
       | "true" -> true_c
       | "false" -> false_c
       | "#" NAME ":" TYPE "(" [term ("," term)*] ")" -> func
       | "[" NAME ":" TYPE "]" -> map_value
       | REDUCE "[" NAME "/" SIGNED_INT ":" TYPE "]" -> map_reduce
       | "@" SIGNED_INT ":" TYPE -> key_ref
       | "global" "[" NAME ":" TYPE "]" -> global_value
       | "top" "[" NAME ":" TYPE "LIMIT" SIGNED_INT "BY" top_item ("," top_item)* "]" -> top_value
       | "kleene_or" "(" rterm ("," rterm)+ ")" -> kleene_or
       | "(" term ")" -> paren_t

TYPE: "int" | "float" | "date" | "string" | "bool"
REDUCE.2: "min" | "max" | "count"
NAME: /(?!(AggSum|AggMin|AggMax|DELTA|DATE|true|false|global|top|kleene_or)\b)[A-Za-z_][A-Za-z0-9_]*/
SIGNED_FLOAT.2: /-?([0-9]+\.[0-9]*([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|inf)/ | /nan/
SIGNED_INT: /-?[0-9]+/
STRING: /'[^']*'/
COMMENT: /--[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""


@lru_cache(maxsize=2)
def _parser(start: str) -> Lark:
    return Lark(_GRAMMAR, start=start, parser="lalr", propagate_positions=True,
                cache=True)     # LALR tables from lark's temp-file cache


_UNTYPED = None


class _Paren:
    """A parenthesized term while parsing (keeps (a + b) + c distinct from a + b + c)."""
    __slots__ = ("term",)

    def __init__(self, term):
        self.term = term


def _untyped(name: str) -> Var:
    return Var(str(name), _UNTYPED)


class _Build(Transformer):
    # ------------------------------------------------------------- terms
    def var(self, c):
        return _untyped(c[0])

    def int_c(self, c):
        return Const(int(c[0]), INT)

    def float_c(self, c):
        return Const(float(c[0]), FLOAT)

    def string_c(self, c):
        return Const(str(c[0])[1:-1], STRING)

    def date_c(self, c):
        return Const(date_to_int(str(c[0])[1:-1]), DATE)

    def true_c(self, c):
        return Const(True, BOOL)

    def false_c(self, c):
        return Const(False, BOOL)

    def paren_t(self, c):
        return _Paren(c[0])

    def neg(self, c):
        return Arith("neg", (c[0],), _UNTYPED)

    def arith(self, c):
        left, op, right = c
        op = str(op)
        if op in "+*" and isinstance(left, Arith) and left.op == op:
            # an unparenthesized chain a + b + c is one n-ary node; (a + b) + c stays nested
            return Arith(op, left.args + (right,), _UNTYPED)
        return Arith(op, (left, right), _UNTYPED)

    def map_value(self, c):
        return MapValue(str(c[0]), type_from_name(str(c[1])))

    def map_reduce(self, c):
        return MapReduce(str(c[0]), str(c[1]), int(c[2]), type_from_name(str(c[3])))

    def top_item(self, c):
        desc = any(getattr(x, "type", None) == "DESC" for x in c)
        flag = [int(x) for x in c[1:] if getattr(x, "type", None) != "DESC"]
        return (int(c[0]), desc) + tuple(flag)

    def top_value(self, c):
        return TopValue(str(c[0]), tuple(c[3:]), int(c[2]), type_from_name(str(c[1])))

    def global_value(self, c):
        return GlobalValue(str(c[0]), type_from_name(str(c[1])))

    def key_ref(self, c):
        return KeyRef(int(c[0]), type_from_name(str(c[1])))

    def vterm(self, c):
        return (ResultColumn(str(c[0]), type_from_name(str(c[1]))), c[2], "term")

    def reads(self, c):
        return ("reads", tuple(str(x) for x in c))

    def groups(self, c):
        return ("groups", str(c[0]))

    def having(self, c):
        return ("having", c[0])

    def order(self, c):
        return ("order", tuple(c))

    def oitem(self, c):
        return (c[0], len(c) > 1)

    def limit(self, c):
        return ("limit", int(c[0]))

    def check(self, c):
        return ("check", (str(c[0]), str(c[1])[1:-1]))

    def nullflag(self, c):
        return ("nullflag", (int(c[0]), int(c[1])))

    def func(self, c):
        return Func(str(c[0]), tuple(a for a in c[2:] if a is not None), type_from_name(str(c[1])))

    def kleene_or(self, c):
        return Func(KLEENE_OR, tuple(c), INT)

    # ------------------------------------------------------- expressions
    def _names(self, toks):
        return tuple(_untyped(t) for t in toks if t is not None)

    def rel(self, c):
        return Rel(str(c[0]), self._names(c[1:]))

    def delta_rel(self, c):
        return DeltaRel(str(c[0]), self._names(c[1:]))

    def map_ref(self, c):
        return MapRef(str(c[0]), self._names(c[1:]), _UNTYPED)

    def value(self, c):
        return Value(c[0])

    def cmp(self, c):
        return Cmp(str(c[1]), c[0], c[2])

    def lift(self, c):
        return Lift(_untyped(c[0]), c[1])

    def sum(self, c):
        return Sum(tuple(c))

    def prod(self, c):
        return Prod(tuple(c))

    def aggsum(self, c):
        return AggSum(self._names(c[:-1]), c[-1])

    def extremum(self, c):
        kind = str(c[0])[3:].lower()
        return Extremum(kind, self._names(c[1:-2]), c[-2], c[-1])

    def start_expr(self, c):
        return c[0]

    # ----------------------------------------------------------- program
    def tvar(self, c):
        return Var(str(c[0]), type_from_name(str(c[1])))

    def col(self, c):
        return Column(str(c[0]), type_from_name(str(c[1])), nullable=len(c) > 2)

    def param(self, c):
        return (str(c[0]), str(c[1])[1:-1])

    def source(self, c):
        return Source(str(c[0])[1:-1], str(c[1]), tuple(p for p in c[2:] if p is not None))

    def relation(self, c):
        cols = physical_columns(x for x in c[2:] if isinstance(x, Column))
        src = next((x for x in c[2:] if isinstance(x, Source)), None)
        return RelationDecl(str(c[1]), cols, str(c[0]).lower(), src)

    def map_decl(self, c):
        role = "aux"
        if isinstance(c[0], Token) and c[0].type == "QROLE":
            role, c = "query", c[1:]
        name = str(c[0])
        keys = tuple(x for x in c[1:-2] if isinstance(x, Var))
        return ("map", name, keys, type_from_name(str(c[-2])), c[-1], role)

    def rcol(self, c):
        return ResultColumn(str(c[0]), type_from_name(str(c[1])))

    def vcol(self, c):
        return (ResultColumn(str(c[0]), type_from_name(str(c[1]))), str(c[2]))

    def result_decl(self, c):
        keys = tuple(x for x in c[1:] if isinstance(x, ResultColumn))
        vals = tuple(x for x in c[1:] if isinstance(x, tuple) and x and isinstance(x[0], ResultColumn))
        extra = {x[0]: x[1] for x in c[1:] if isinstance(x, tuple) and x and isinstance(x[0], str)}
        checks = tuple(x[1] for x in c[1:] if isinstance(x, tuple) and x and x[0] == "check")
        null_keys = tuple(x[1] for x in c[1:] if isinstance(x, tuple) and x and x[0] == "nullflag")
        if not vals or len(vals[0]) == 2:
            return QueryResult(str(c[0]), keys, tuple(v[0] for v in vals), tuple(v[1] for v in vals),
                               checks=checks, null_keys=null_keys)
        env = _TypeEnv({}, {})
        terms = tuple(_type_rterm(env, v[1]) for v in vals)
        having = _type_rterm(env, extra["having"]) if "having" in extra else None
        order = tuple((_type_rterm(env, t), d) for t, d in extra.get("order", ()))
        return QueryResult(str(c[0]), keys, tuple(v[0] for v in vals), extra.get("reads", ()),
                           order_by=order, value_terms=terms, group_map=extra.get("groups"),
                           having=having, limit=extra.get("limit"), checks=checks, null_keys=null_keys)

    def tuple_event(self, c):
        kind = "insert" if str(c[0]) == "+" else "delete"
        return Event(kind, str(c[1]), tuple(x for x in c[2:] if x is not None))

    def batch_event(self, c):
        return Event("batch", str(c[0]), ())

    def ready_event(self, c):
        return Event("ready", "", ())

    def statement(self, c):
        names = [x for x in c[1:-2] if x is not None]
        return ("stmt", str(c[0]), tuple(_untyped(n) for n in names), str(c[-2]), c[-1])

    def trigger(self, c):
        return ("trigger", c[0], tuple(c[1:]))

    def program(self, c):
        return list(c)


# --------------------------------------------------------------------- typing

class _TypeEnv:
    """Collects variable types from binding positions, then rebuilds nodes with them."""

    def __init__(self, rel_types: dict, map_types: dict):
        self.rel_types = rel_types          # name -> tuple[Type]
        self.map_types = map_types          # name -> (tuple[key Type], value Type)
        self.vars: dict[str, Type] = {}

    def bind(self, name: str, t: Type):
        old = self.vars.get(name)
        if old is not None and old != t:
            raise SemanticError(f"variable {name} used with types {old} and {t}")
        self.vars[name] = t

    def collect(self, e):
        match e:
            case Rel(n, vs) | DeltaRel(n, vs):
                ts = self.rel_types.get(n)
                if ts is None:
                    raise SemanticError(f"unknown relation {n}")
                if len(ts) != len(vs):
                    raise SemanticError(f"{n} has {len(ts)} columns, used with {len(vs)}")
                for v, t in zip(vs, ts):
                    self.bind(v.name, t)
            case MapRef(n, vs, _):
                mt = self.map_types.get(n)
                if mt is None:
                    raise SemanticError(f"unknown map {n}")
                for v, t in zip(vs, mt[0]):
                    self.bind(v.name, t)
            case Lift(v, q):
                self.collect(q)
                if isinstance(q, Value):
                    t = self.term(q.term).type
                    self.bind(v.name, FLOAT if t == FLOAT else t)
                else:
                    self.bind(v.name, expr_type(self.expr(q)))
            case Sum(ts) | Prod(ts):
                for t in ts:
                    self.collect(t)
            case AggSum(_, q) | Extremum(_, _, _, q):
                self.collect(q)
            case Value() | Cmp():
                pass

    def var(self, v: Var) -> Var:
        if v.type is not None:
            return v
        t = self.vars.get(v.name)
        if t is None:
            raise SemanticError(f"cannot infer the type of variable {v.name}")
        return Var(v.name, t)

    def term(self, t):
        match t:
            case _Paren():
                return self.term(t.term)
            case MapValue() | MapReduce() | KeyRef() | GlobalValue() | TopValue():
                return t
            case Var():
                return self.var(t)
            case Const():
                return t
            case Arith("neg", (a,), _):
                a2 = self.term(a)
                return Arith("neg", (a2,), a2.type)
            case Arith(op, args, _):
                args2 = tuple(self.term(a) for a in args)
                if op == "/":
                    ty = FLOAT
                else:
                    ty = FLOAT if any(a.type == FLOAT for a in args2) else INT
                return Arith(op, args2, ty)
            case Func(n, args, ty) if n == KLEENE_OR:
                return Func(n, tuple(_type_rterm(self, a) for a in args), ty)
            case Func(n, args, ty):
                return Func(n, tuple(self.term(a) for a in args), ty)
        raise TypeError(t)

    def expr(self, e):
        match e:
            case Rel(n, vs):
                return Rel(n, tuple(self.var(v) for v in vs))
            case DeltaRel(n, vs):
                return DeltaRel(n, tuple(self.var(v) for v in vs))
            case MapRef(n, vs, _):
                return MapRef(n, tuple(self.var(v) for v in vs), self.map_types[n][1])
            case Value(t):
                return Value(self.term(t))
            case Cmp(op, a, b):
                return Cmp(op, self.term(a), self.term(b))
            case Lift(v, q):
                return Lift(self.var(v), self.expr(q))
            case Sum(ts):
                return Sum(tuple(self.expr(t) for t in ts))
            case Prod(fs):
                return Prod(tuple(self.expr(f) for f in fs))
            case AggSum(gs, q):
                return AggSum(tuple(self.var(g) for g in gs), self.expr(q))
            case Extremum(kind, gs, t, q):
                return Extremum(kind, tuple(self.var(g) for g in gs), self.term(t), self.expr(q))
        raise TypeError(e)


def _type_rterm(env: "_TypeEnv", t):
    if isinstance(t, (Cmp, Prod, Sum, Value)):
        return env.expr(t)
    return env.term(t)


def _syntax(e: UnexpectedInput, text: str) -> SqlSyntaxError:
    return SqlSyntaxError(f"cannot parse IR text near {text[e.pos_in_stream:e.pos_in_stream + 20]!r}"
                          if getattr(e, "pos_in_stream", None) is not None else "cannot parse IR text",
                          line=getattr(e, "line", None), column=getattr(e, "column", None))


def parse_expr(text: str, relations=(), maps: dict | None = None, var_types: dict | None = None):
    """Parse one calculus expression. `relations`: RelationDecls (or {name: types});
    `maps`: {name: (key types, value type)}; `var_types`: types of free variables."""
    try:
        tree = _parser("start_expr").parse(text)
    except UnexpectedInput as e:
        raise _syntax(e, text) from None
    raw = _Build().transform(tree)
    env = _TypeEnv(_rel_types(relations), dict(maps or {}))
    for n, t in (var_types or {}).items():
        env.bind(n, t)
    env.collect(raw)
    return env.expr(raw)


def _rel_types(relations) -> dict:
    if isinstance(relations, dict):
        return dict(relations)
    return {r.name: r.types for r in relations}
