-- M3 program (mode: tuple)
-- m3_factorize: SUM(r.B * (1 - s.C)) was expanded by the delta rules into two maps over S (count and
-- SUM(C) per B) and two statements per trigger; the pass fuses the maps into one holding mS1 - mS2
-- and merges each pair of statements into one (one loop, one upsert)
-- RUN: m3_factorize
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP __SQL_SUM_AGGREGATE_1[R_A:int]: int :=
  AggSum([R_A], ((R(R_A, S_B) * S(S_B, S_C) * {S_B}) + ({-1} * R(R_A, S_B) * S(S_B, S_C) * {S_B} * {S_C})));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mS1[S_B:int]: int :=
  AggSum([S_B], S(S_B, S_C));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mS2[S_B:int]: int :=
  AggSum([S_B], (S(S_B, S_C) * {S_C}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mR3[R_B:int, R_A:int]: int :=
  AggSum([R_B, R_A], R(R_A, R_B));

DECLARE RESULT QUERY_1 KEYS (A:int) VALUES (__SQL_SUM_AGGREGATE_1:int FROM __SQL_SUM_AGGREGATE_1);

ON + R(r_a:int, r_b:int) {
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[r_b] * {r_b}));
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mS2[r_b] * {r_b}));
  __SQL_SUM_AGGREGATE_1_mR3[r_b, r_a] += AggSum([], {1});
}

ON - R(r_a:int, r_b:int) {
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mS1[r_b] * {r_b}));
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], (__SQL_SUM_AGGREGATE_1_mS2[r_b] * {r_b}));
  __SQL_SUM_AGGREGATE_1_mR3[r_b, r_a] += AggSum([], {-1});
}

ON + S(s_b:int, s_c:int) {
  __SQL_SUM_AGGREGATE_1[R_A] += AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[s_b, R_A] * {s_b}));
  __SQL_SUM_AGGREGATE_1[R_A] += AggSum([R_A], ({-1} * __SQL_SUM_AGGREGATE_1_mR3[s_b, R_A] * {s_b} * {s_c}));
  __SQL_SUM_AGGREGATE_1_mS1[s_b] += AggSum([], {1});
  __SQL_SUM_AGGREGATE_1_mS2[s_b] += AggSum([], {s_c});
}

ON - S(s_b:int, s_c:int) {
  __SQL_SUM_AGGREGATE_1[R_A] += AggSum([R_A], ({-1} * __SQL_SUM_AGGREGATE_1_mR3[s_b, R_A] * {s_b}));
  __SQL_SUM_AGGREGATE_1[R_A] += AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[s_b, R_A] * {s_b} * {s_c}));
  __SQL_SUM_AGGREGATE_1_mS1[s_b] += AggSum([], {-1});
  __SQL_SUM_AGGREGATE_1_mS2[s_b] += AggSum([], ({-1} * {s_c}));
}

-- CHECK: DECLARE MAP __SQL_SUM_AGGREGATE_1_mS1[S_B:int]: int :=
-- CHECK-NOT: DECLARE MAP __SQL_SUM_AGGREGATE_1_mS2
-- CHECK: ON + R(r_a:int, r_b:int) {
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[r_b] * {r_b}));
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1_mR3[r_b, r_a] += AggSum([], {1});
-- CHECK: ON + S(s_b:int, s_c:int) {
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1[R_A] += AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[s_b, R_A] * {s_b} * {1 + (-1 * s_c)}));
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1_mS1[s_b] += AggSum([], {1 + (-1 * s_c)});
-- CHECK-NEXT: }
