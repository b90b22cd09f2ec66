"""Hand-built M3 programs exercising the local lowering chain (used by tests and demos).

Each builder returns an M3Program in 'tuple' or 'batch' mode. They do not depend on the
SQL front end, so the K3 and imperative stages can be tested on their own.
"""
from __future__ import annotations

from toaster.calculus.ir import (AggSum, Arith, Cmp, Const, DeltaRel, Lift, MapRef, Prod, Sum, Value, Var,
                                 Rel, neg)
from toaster.m3.ir import Event, M3Program, MapDecl, Statement, Trigger
from toaster.schema import Column, QueryResult, RelationDecl, ResultColumn
from toaster.types import INT, FLOAT


def _rel(name, *cols, kind="stream"):
    return RelationDecl(name, tuple(Column(c, t) for c, t in cols), kind)


def _v(name, t=INT):
    return Var(name, t)


def _triggers(mode: str, relations, body):
    """body(event_args_or_None, sign, relation) -> statements. Tuple mode: +/- triggers."""
    out = []
    for r in relations:
        if mode == "batch":
            out.append(Trigger(Event("batch", r.name, ()), tuple(body(r, None, 1))))
        else:
            args = tuple(Var(c.name.lower(), c.type) for c in r.columns)
            out.append(Trigger(Event("insert", r.name, args), tuple(body(r, args, 1))))
            if r.kind == "stream":
                out.append(Trigger(Event("delete", r.name, args), tuple(body(r, args, -1))))
    return out


def _signed(e, sign):
    return e if sign == 1 else neg(e)


def three_way_join(mode: str = "tuple") -> M3Program:
    """SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C (the common.md example)."""
    R = _rel("R", ("A", INT), ("B", INT))
    S = _rel("S", ("B", INT), ("C", INT))
    T = _rel("T", ("C", INT), ("D", INT))
    A, B, C, D = _v("A"), _v("B"), _v("C"), _v("D")
    Q = MapRef("QUERY_1_SUM", (), INT)
    maps = (
        MapDecl("QUERY_1_SUM", (), INT, AggSum((), Prod((Rel("R", (A, B)), Rel("S", (B, C)), Rel("T", (C, D)),
                                                           Value(Arith("*", (A, D), INT))))), "query"),
        MapDecl("M1", (B,), INT, AggSum((B,), Prod((Rel("S", (B, C)), Rel("T", (C, D)), Value(D))))),
        MapDecl("M2", (B, C), INT, AggSum((B, C), Rel("S", (B, C)))),
        MapDecl("M3", (C,), INT, AggSum((C,), Prod((Rel("T", (C, D)), Value(D))))),
        MapDecl("M4", (B,), INT, AggSum((B,), Prod((Rel("R", (A, B)), Value(A))))),
        MapDecl("M5", (C,), INT, AggSum((C,), Prod((Rel("R", (A, B)), Rel("S", (B, C)), Value(A))))),
    )

    def body(r, args, sign):
        if mode == "batch":
            a, b = (A, B) if r.name == "R" else ((B, C) if r.name == "S" else (C, D))
            d = DeltaRel(r.name, (a, b))
            if r.name == "R":
                return [Statement("QUERY_1_SUM", (), "+=", AggSum((), Prod((d, Value(A), MapRef("M1", (B,), INT))))),
                        Statement("M5", (C,), "+=", AggSum((C,), Prod((d, Value(A), MapRef("M2", (B, C), INT))))),
                        Statement("M4", (B,), "+=", AggSum((B,), Prod((d, Value(A))))),
                        ]
            if r.name == "S":
                return [Statement("QUERY_1_SUM", (), "+=", AggSum((), Prod((d, MapRef("M4", (B,), INT),
                                                                             MapRef("M3", (C,), INT))))),
                        Statement("M1", (B,), "+=", AggSum((B,), Prod((d, MapRef("M3", (C,), INT))))),
                        Statement("M2", (B, C), "+=", d),
                        Statement("M5", (C,), "+=", AggSum((C,), Prod((d, MapRef("M4", (B,), INT))))),
                        ]
            return [Statement("QUERY_1_SUM", (), "+=", AggSum((), Prod((d, MapRef("M5", (C,), INT), Value(D))))),
                    Statement("M1", (B,), "+=", AggSum((B,), Prod((d, MapRef("M2", (B, C), INT), Value(D))))),
                    Statement("M3", (C,), "+=", AggSum((C,), Prod((d, Value(D))))),
                    ]
        x, y = args
        if r.name == "R":
            return [Statement("QUERY_1_SUM", (), "+=", _signed(Prod((Value(x), MapRef("M1", (y,), INT))), sign)),
                    Statement("M5", (C,), "+=", _signed(AggSum((C,), Prod((Value(x), MapRef("M2", (y, C), INT)))), sign)),
                    Statement("M4", (y,), "+=", _signed(Value(x), sign))]
        if r.name == "S":
            return [Statement("QUERY_1_SUM", (), "+=", _signed(Prod((MapRef("M4", (x,), INT), MapRef("M3", (y,), INT))), sign)),
                    Statement("M1", (x,), "+=", _signed(MapRef("M3", (y,), INT), sign)),
                    Statement("M2", (x, y), "+=", _signed(Value(Const(1, INT)), sign)),
                    Statement("M5", (y,), "+=", _signed(MapRef("M4", (x,), INT), sign))]
        return [Statement("QUERY_1_SUM", (), "+=", _signed(Prod((MapRef("M5", (x,), INT), Value(y))), sign)),
                Statement("M1", (B,), "+=", _signed(AggSum((B,), Prod((MapRef("M2", (B, x), INT), Value(y)))), sign)),
                Statement("M3", (x,), "+=", _signed(Value(y), sign))]

    rels = (R, S, T)
    q = QueryResult("QUERY_1", (), (ResultColumn("SUM", INT),), ("QUERY_1_SUM",))
    return M3Program(rels, maps, tuple(_triggers(mode, rels, body)), (q,), mode)


def nested_lift(mode: str = "tuple") -> M3Program:
    """Re-evaluation style program with a nested aggregate, a filter, a float map and a lift:

      COUNT_B[B]  := AggSum([B], R(A,B))                     (maintained incrementally)
      SUM_A[B]    := AggSum([B], R(A,B) * {A})               (maintained incrementally)
      RES[B]      := AggSum([B], (N ^= COUNT_B[B]) * {N > 1} * SUM_A[B] * {0.5})   (float, recomputed)
      TOTAL[]     := AggSum([], (X ^= AggSum([], SUM_A[B2])) * {X})   (recomputed; Lift of a scalar)
      GROWTH[B]   += statements reading their own target (through a temp map)
      BY_COUNT[N] := AggSum([N], (N ^= COUNT_B[B]) * SUM_A[B] * {1 / N})   (lift with outputs)
      CHECK[]     := AggSum([], COUNT_B[B] * (B ^= COUNT_B[B]))              (lift as a test)
    """
    R = _rel("R", ("A", INT), ("B", INT))
    A, B, B2, N, X = _v("A"), _v("B"), _v("B2"), _v("N"), _v("X")
    maps = (
        MapDecl("COUNT_B", (B,), INT, AggSum((B,), Rel("R", (A, B)))),
        MapDecl("SUM_A", (B,), INT, AggSum((B,), Prod((Rel("R", (A, B)), Value(A))))),
        MapDecl("RES", (B,), FLOAT, AggSum((B,), Rel("R", (A, B))), "query"),
        MapDecl("TOTAL", (), INT, AggSum((), Rel("R", (A, B))), "query"),
        MapDecl("GROWTH", (B,), INT, AggSum((B,), Rel("R", (A, B)))),
        MapDecl("BY_COUNT", (N,), FLOAT, AggSum((N,), Rel("R", (A, N))), "query"),
        MapDecl("CHECK", (), INT, AggSum((), Rel("R", (A, B))), "query"),
    )
    # BY_COUNT[N] := sum over groups B with count N of SUM_A[B] / N   (lift of a non-scalar body)
    by_count_rhs = AggSum((N,), Prod((Lift(N, MapRef("COUNT_B", (B,), INT)), MapRef("SUM_A", (B,), INT),
                                      Value(Arith("/", (Const(1, INT), N), FLOAT)))))
    # CHECK[] := number of B whose count equals B   (lift of an already bound variable: a test)
    check_rhs = AggSum((), Prod((MapRef("COUNT_B", (B,), INT), Lift(B, MapRef("COUNT_B", (B,), INT)))))
    res_rhs = AggSum((B,), Prod((MapRef("COUNT_B", (B,), INT), Lift(N, MapRef("COUNT_B", (B,), INT)),
                                 Cmp(">", N, Const(1, INT)), MapRef("SUM_A", (B,), INT),
                                 Value(Const(0.5, FLOAT)))))
    # COUNT_B[B] * (N ^= COUNT_B[B]) binds B first, so the lift is of a scalar lookup
    total_rhs = Prod((Lift(X, AggSum((), MapRef("SUM_A", (B2,), INT))), Value(X)))

    def body(r, args, sign):
        if mode == "batch":
            d = DeltaRel("R", (A, B))
            incr = [Statement("COUNT_B", (B,), "+=", AggSum((B,), d)),
                    Statement("SUM_A", (B,), "+=", AggSum((B,), Prod((d, Value(A))))),
                    Statement("GROWTH", (B,), "+=", AggSum((B,), Prod((d, Sum((MapRef("GROWTH", (B,), INT),
                                                                                Value(Const(1, INT)))))))),
                    ]
        else:
            a, b = args
            incr = [Statement("COUNT_B", (b,), "+=", _signed(Value(Const(1, INT)), sign)),
                    Statement("SUM_A", (b,), "+=", _signed(Value(a), sign)),
                    # reads its own target: GROWTH[b] += GROWTH[b] + 1 (doubling plus one)
                    Statement("GROWTH", (b,), "+=", Sum((MapRef("GROWTH", (b,), INT), Value(Const(1, INT))))),
                    Statement("GROWTH", (B,), "+=", AggSum((B,), Prod((MapRef("GROWTH", (B,), INT),
                                                                       Cmp("=", B, Arith("+", (b, Const(1, INT)), INT)))))),
                    ]
        return incr + [Statement("RES", (B,), ":=", res_rhs), Statement("TOTAL", (), ":=", total_rhs),
                       Statement("BY_COUNT", (N,), ":=", by_count_rhs), Statement("CHECK", (), ":=", check_rhs)]

    rels = (R,)
    qs = (QueryResult("RES", (ResultColumn("B", INT),), (ResultColumn("V", FLOAT),), ("RES",)),
          QueryResult("TOTAL", (), (ResultColumn("V", INT),), ("TOTAL",)),
          QueryResult("BY_COUNT", (ResultColumn("N", INT),), (ResultColumn("V", FLOAT),), ("BY_COUNT",)),
          QueryResult("CHECK", (), (ResultColumn("V", INT),), ("CHECK",)))
    return M3Program(rels, maps, tuple(_triggers(mode, rels, body)), qs, mode)


EXAMPLES = {"three_way_join": three_way_join, "nested_lift": nested_lift}
