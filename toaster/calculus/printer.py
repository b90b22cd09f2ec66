"""Canonical text for calculus expressions and M3 programs (parsed back by calculus.parser).

Calculus:  R(A, B)   (DELTA R)(A, B)   M1[A, B]   {A * 2}   {A < 3}   (X ^= Q)
           (Q1 + Q2)   (Q1 * Q2)   AggSum([A, B], Q)
Terms:     variables by name; 3, -3, 2.5, 'str', DATE('1995-01-01'), true/false;
           (a + b), (a - b), (a * b), (a / b), -(a); functions #name:type(args)
"""
from __future__ import annotations

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Extremum, Func, Lift, MapRef, Prod, Rel,
                                 Sum, Value, Var)
from toaster.calculus.results import KLEENE_OR, GlobalValue, KeyRef, MapReduce, MapValue, TopValue
from toaster.types import DATE, FLOAT, INT, STRING, BOOL, int_to_date


def print_term(t) -> str:
    match t:
        case Var(n, _):
            return n
        case Const(v, ty):
            if ty == DATE:
                return f"DATE('{int_to_date(v)}')"
            if ty == STRING:
                if "'" in v:
                    raise ValueError(f"string constant with a quote cannot be printed: {v!r}")
                return f"'{v}'"
            if ty == BOOL:
                return "true" if v else "false"
            if ty == FLOAT:
                s = repr(float(v))
                return s if any(ch in s for ch in ".einf") else s + ".0"
            return str(int(v))
        case Arith("neg", (a,), _):
            return f"-({print_term(a)})"
        case Arith(op, args, _):
            return "(" + f" {op} ".join(print_term(a) for a in args) + ")"
        case Func(name, args, _) if name == KLEENE_OR:     # of result conditions
            return f"{KLEENE_OR}(" + ", ".join(_rterm(a) for a in args) + ")"
        case Func(name, args, ty):
            return f"#{name}:{ty}(" + ", ".join(print_term(a) for a in args) + ")"
        case MapValue(m, ty):
            return f"[{m}:{ty}]"
        case MapReduce(kind, m, extra, ty):
            return f"{kind}[{m}/{extra}:{ty}]"
        case KeyRef(i, ty):
            return f"@{i}:{ty}"
        case GlobalValue(m, ty):
            return f"global[{m}:{ty}]"
        case TopValue(m, order, limit, ty):
            by = ", ".join(f"@{o[0]}" + (" DESC" if o[1] else "") + (f" NULL @{o[2]}" if len(o) > 2 else "")
                           for o in order)
            return f"top[{m}:{ty} LIMIT {limit} BY {by}]"
    raise TypeError(f"not a term: {t!r}")


def _vars(vs) -> str:
    return ", ".join(v.name for v in vs)


def print_expr(e) -> str:
    match e:
        case Rel(n, vs):
            return f"{n}({_vars(vs)})"
        case DeltaRel(n, vs):
            return f"(DELTA {n})({_vars(vs)})"
        case MapRef(n, vs, _):
            return f"{n}[{_vars(vs)}]"
        case Value(t):
            s = print_term(t)
            return "{" + (s[1:-1] if s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]) else s) + "}"
        case Cmp(op, a, b):
            return "{" + f"{print_term(a)} {op} {print_term(b)}" + "}"
        case Lift(v, q):
            return f"({v.name} ^= {print_expr(q)})"
        case Sum(ts):
            return "(" + " + ".join(print_expr(t) for t in ts) + ")"
        case Prod(fs):
            return "(" + " * ".join(print_expr(f) for f in fs) + ")"
        case AggSum(gs, q):
            return f"AggSum([{_vars(gs)}], {print_expr(q)})"
        case Extremum(kind, gs, t, q):
            return f"Agg{kind.capitalize()}([{_vars(gs)}], {print_term(t)}, {print_expr(q)})"
    raise TypeError(f"not a calculus expression: {e!r}")


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _typed_vars(vs) -> str:
    return ", ".join(f"{v.name}:{v.type}" for v in vs)


def print_relation(r) -> str:
    cols = ", ".join(f"{c.name} {c.type}" + (" NULL" if c.nullable else "") for c in r.logical_columns)
    src = ""
    if r.source is not None:
        params = ", ".join(f"{k} := '{v}'" for k, v in r.source.params)
        src = f" FROM FILE '{r.source.path}' LINE DELIMITED {r.source.adaptor}({params})"
    return f"CREATE {r.kind.upper()} {r.name}({cols}){src};"


def print_map_decl(m) -> str:
    role = "QUERY MAP" if m.role == "query" else "MAP"
    return f"DECLARE {role} {m.name}[{_typed_vars(m.keys)}]: {m.type} :=\n  {print_expr(m.definition)};"


def print_query_result(q) -> str:
    keys = ", ".join(f"{c.name}:{c.type}" for c in q.key_columns)
    checks = "".join(f"\n  CHECK {m} '{message}'" for m, message in q.checks)
    checks += "".join(f"\n  NULLFLAG {k} {f}" for k, f in q.null_keys)
    if q.value_terms is None:
        vals = ", ".join(f"{c.name}:{c.type} FROM {m}" for c, m in zip(q.value_columns, q.value_maps))
        return f"DECLARE RESULT {q.name} KEYS ({keys}) VALUES ({vals}){checks};"
    vals = ", ".join(f"{c.name}:{c.type} := {_rterm(t)}" for c, t in zip(q.value_columns, q.value_terms))
    out = f"DECLARE RESULT {q.name} KEYS ({keys}) VALUES ({vals})\n  READS ({', '.join(q.value_maps)})"
    if q.group_map is not None:
        out += f"\n  GROUPS {q.group_map}"
    if q.having is not None:
        out += f"\n  HAVING {_rterm(q.having)}"
    if q.order_by:
        out += "\n  ORDER BY " + ", ".join(_rterm(t) + (" DESC" if d else "") for t, d in q.order_by)
    if q.limit is not None:
        out += f"\n  LIMIT {q.limit}"
    return out + checks + ";"


def _rterm(t) -> str:
    """A result term or condition (conditions print as calculus expressions)."""
    if isinstance(t, (Cmp, Prod, Sum, Value)):
        return print_expr(t)
    return print_term(t)


def print_calc_program(prog) -> str:
    """The `calc` stage dump: declarations, query maps (AGCA), result shapes."""
    out = [print_relation(r) for r in prog.relations] + [""]
    out += [print_map_decl(m) for m in prog.maps] + [""]
    out += [print_query_result(q) for q in prog.queries]
    return "\n".join(out) + "\n"
