"""Name resolution, type checking and result naming for SELECT statements.

Produces ResolvedQuery objects: the select with every ColumnRef resolved (source alias and
type), every expression typed, and the result shape decided (DIALECT.md §5 and §9): key
columns (non-aggregate targets in SELECT order, then unselected GROUP BY columns) and value
columns (one per aggregate target, or COUNT for a non-aggregate query).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from toaster.errors import SemanticError, UnsupportedError
from toaster.frontend import ast as A
from toaster.types import INT, FLOAT, DATE, STRING, BOOL, Type


@dataclass(frozen=True)
class ResolvedQuery:
    index: int                 # 1-based position among the program's SELECTs
    name: str                  # 'QUERY_<index>'
    select: A.Select           # with resolved ColumnRefs and typed expressions
    aliases: tuple             # tuple[(alias, RelationDecl)] in FROM order
    key_columns: tuple         # tuple[(output name, ColumnRef)]
    value_columns: tuple       # tuple[(output name, AggCall | None)]; None = multiplicity (COUNT)
    is_aggregate: bool


def _err(msg: str, node, cls=SemanticError):
    pos = getattr(node, "pos", A.NOPOS)
    return cls(msg, line=pos.line or None, column=pos.column or None)


class _Scope:
    def __init__(self, aliases):
        self.aliases = dict(aliases)

    def resolve(self, ref: A.ColumnRef) -> A.ColumnRef:
        if ref.qualifier is not None:
            decl = self.aliases.get(ref.qualifier)
            if decl is None:
                raise _err(f"unknown relation or alias {ref.qualifier}", ref)
            col = next((c for c in decl.columns if c.name == ref.name), None)
            if col is None:
                raise _err(f"{ref.qualifier} has no column {ref.name}", ref)
            return replace(ref, source=ref.qualifier, type=col.type)
        hits = [(a, c) for a, d in self.aliases.items() for c in d.columns if c.name == ref.name]
        if not hits:
            raise _err(f"unknown column {ref.name}", ref)
        if len(hits) > 1:
            raise _err(f"ambiguous column {ref.name} (in {', '.join(a for a, _ in hits)})", ref)
        alias, col = hits[0]
        return replace(ref, source=alias, type=col.type)


def expr_type(e) -> Type:
    if isinstance(e, A.Literal):
        return e.type
    return e.type


def _check_expr(e, scope: _Scope, allow_agg: bool):
    """Resolve and type an expression; returns the new node."""
    match e:
        case A.Literal():
            return e
        case A.ColumnRef():
            return scope.resolve(e)
        case A.BinaryOp(op, l, r):
            l2, r2 = _check_expr(l, scope, allow_agg), _check_expr(r, scope, allow_agg)
            for side in (l2, r2):
                if not expr_type(side).is_numeric:
                    raise _err(f"operator {op} needs numbers, got {expr_type(side)}", side)
            if op == "/":
                t = FLOAT
            else:
                t = FLOAT if FLOAT in (expr_type(l2), expr_type(r2)) else INT
            return replace(e, left=l2, right=r2, type=t)
        case A.Negate(arg):
            a2 = _check_expr(arg, scope, allow_agg)
            if not expr_type(a2).is_numeric:
                raise _err(f"unary - needs a number, got {expr_type(a2)}", a2)
            return replace(e, arg=a2, type=expr_type(a2))
        case A.AggCall(func, args):
            if not allow_agg:
                raise _err(f"aggregate {func} is not allowed here", e)
            args2 = tuple(_check_expr(a, scope, False) for a in args)
            if func == "SUM":
                if not expr_type(args2[0]).is_numeric:
                    raise _err(f"SUM needs a number, got {expr_type(args2[0])}", args2[0])
                t = expr_type(args2[0])
            else:
                t = INT
            return replace(e, args=args2, type=t)
    raise _err(f"unexpected expression {type(e).__name__}", e, UnsupportedError)


def _comparable(a: Type, b: Type) -> bool:
    if a.is_numeric and b.is_numeric:
        return True
    return a == b


def _check_cond(c, scope: _Scope):
    match c:
        case A.Comparison(op, l, r):
            l2, r2 = _check_expr(l, scope, False), _check_expr(r, scope, False)
            if not _comparable(expr_type(l2), expr_type(r2)):
                raise _err(f"cannot compare {expr_type(l2)} with {expr_type(r2)}", c)
            return replace(c, left=l2, right=r2)
        case A.And(args):
            return replace(c, args=tuple(_check_cond(a, scope) for a in args))
        case A.Or():
            raise _err("OR", c, UnsupportedError)
        case A.NotCond():
            raise _err("NOT", c, UnsupportedError)
        case A.BoolConst():
            return c
    raise _err(f"unexpected condition {type(c).__name__}", c, UnsupportedError)


def _contains_agg(e) -> bool:
    match e:
        case A.AggCall():
            return True
        case A.BinaryOp(_, l, r):
            return _contains_agg(l) or _contains_agg(r)
        case A.Negate(a):
            return _contains_agg(a)
    return False


def resolve_program(prog: A.SqlProgram) -> tuple:
    """Resolve every SELECT of the program; returns tuple[ResolvedQuery]."""
    relations = {r.name: r for r in prog.relations}
    several = len(prog.selects) > 1
    counter = [0]
    out = []
    for i, sel in enumerate(prog.selects, start=1):
        try:
            out.append(_resolve_select(sel, i, relations, several, counter))
        except SemanticError as e:
            raise e.located(prog.file)
        except UnsupportedError as e:
            raise e.located(prog.file)
    return tuple(out)


def _resolve_select(sel: A.Select, index: int, relations: dict, several: bool, counter) -> ResolvedQuery:
    if not sel.from_items:
        raise _err("SELECT without FROM", sel, UnsupportedError)
    aliases = []
    for item in sel.from_items:
        decl = relations.get(item.relation)
        if decl is None:
            raise _err(f"unknown relation {item.relation}", item)
        if any(a == item.alias for a, _ in aliases):
            raise _err(f"duplicate relation name {item.alias} in FROM (use aliases)", item)
        aliases.append((item.alias, decl))
    scope = _Scope(aliases)
    where = _check_cond(sel.where, scope) if sel.where is not None else None
    group_by = []
    for g in sel.group_by:
        if not isinstance(g, A.ColumnRef):
            raise _err("GROUP BY on an expression", g, UnsupportedError)
        group_by.append(scope.resolve(g))
    targets = []
    for t in sel.targets:
        expr = _check_expr(t.expr, scope, allow_agg=True)
        if _contains_agg(expr) and not isinstance(expr, A.AggCall):
            raise _err("arithmetic over aggregates (e.g. SUM(x) * 2)", t, UnsupportedError)
        targets.append(replace(t, expr=expr))
    is_agg = bool(group_by) or any(isinstance(t.expr, A.AggCall) for t in targets)
    prefix = f"QUERY_{index}_" if several else ""
    used_names: set[str] = set()

    def unique(name: str) -> str:
        base, n = name, 2
        while name in used_names:
            name = f"{base}_{n}"
            n += 1
        used_names.add(name)
        return name

    key_columns, value_columns = [], []
    gb_keys = {(g.source, g.name) for g in group_by}
    for t in targets:
        if isinstance(t.expr, A.AggCall):
            continue
        if not isinstance(t.expr, A.ColumnRef):
            raise _err("a non-aggregate target that is not a plain column", t, UnsupportedError)
        if is_agg and (t.expr.source, t.expr.name) not in gb_keys:
            raise _err(f"column {t.expr.name} must appear in GROUP BY or inside an aggregate", t)
        if any((c.source, c.name) == (t.expr.source, t.expr.name) for _, c in key_columns):
            raise _err(f"column {t.expr.name} selected twice", t, UnsupportedError)
        key_columns.append((unique(t.alias or t.expr.name), t.expr))
    for g in group_by:
        if not any((c.source, c.name) == (g.source, g.name) for _, c in key_columns):
            key_columns.append((unique(g.name), g))
    if is_agg:
        for t in targets:
            if not isinstance(t.expr, A.AggCall):
                continue
            counter[0] += 1
            if t.alias:
                name = prefix + t.alias
            else:
                name = f"{prefix}__SQL_{t.expr.func}_AGGREGATE_{counter[0]}"
            value_columns.append((unique(name), t.expr))
    else:
        value_columns.append((unique(prefix + "COUNT"), None))
    new_sel = replace(sel, targets=tuple(targets), where=where, group_by=tuple(group_by))
    return ResolvedQuery(index, f"QUERY_{index}", new_sel, tuple(aliases), tuple(key_columns),
                         tuple(value_columns), is_agg)
