-- M3 program (mode: tuple)
-- m3_view_cache (VLDBJ'14 §5.2): the nested SUM correlated by the range S_B > R_A, re-evaluated per
-- outer key on every S event, becomes a cache keyed by R_A over R's A domain, kept by O(|domain|) statements
-- RUN: m3_view_cache
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP __SQL_SUM_AGGREGATE_1[R_A:int]: int :=
  AggSum([R_A], (R(R_A, R_B) * (__cnt1 ^= AggSum([], (S(S_B, S_C) * {S_B > R_A}))) * (__sub2 ^= AggSum([], (S(S_B, S_C) * {S_B > R_A} * {S_C}))) * {R_B < __sub2} * {__cnt1 != 0} * {R_B}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mS1[S_B:int]: int :=
  AggSum([S_B], S(S_B, S_C));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mS2[S_B:int]: int :=
  AggSum([S_B], (S(S_B, S_C) * {S_C}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mR3[R_A:int, R_B:int]: int :=
  AggSum([R_A, R_B], (R(R_A, R_B) * {R_B}));

DECLARE RESULT QUERY_1 KEYS (A:int) VALUES (__SQL_SUM_AGGREGATE_1:int FROM __SQL_SUM_AGGREGATE_1);

ON + R(r_a:int, r_b:int) {
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], ((__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[S_B] * {S_B > r_a})))) * (__sub2 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS2[S_B] * {S_B > r_a})))) * {__cnt1 != 0} * {r_b < __sub2} * {r_b}));
  __SQL_SUM_AGGREGATE_1_mR3[r_a, r_b] += AggSum([], {r_b});
}

ON - R(r_a:int, r_b:int) {
  __SQL_SUM_AGGREGATE_1[r_a] += AggSum([], ({-1} * (__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[S_B] * {S_B > r_a})))) * (__sub2 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS2[S_B] * {S_B > r_a})))) * {__cnt1 != 0} * {r_b < __sub2} * {r_b}));
  __SQL_SUM_AGGREGATE_1_mR3[r_a, r_b] += AggSum([], ({-1} * {r_b}));
}

ON + S(s_b:int, s_c:int) {
  __SQL_SUM_AGGREGATE_1_mS1[s_b] += AggSum([], {1});
  __SQL_SUM_AGGREGATE_1_mS2[s_b] += AggSum([], {s_c});
  __SQL_SUM_AGGREGATE_1[R_A] := AggSum([R_A], AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[R_A, R_B] * (__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[S_B] * {S_B > R_A})))) * (__sub2 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS2[S_B] * {S_B > R_A})))) * {R_B < __sub2} * {__cnt1 != 0})));
}

ON - S(s_b:int, s_c:int) {
  __SQL_SUM_AGGREGATE_1_mS1[s_b] += AggSum([], {-1});
  __SQL_SUM_AGGREGATE_1_mS2[s_b] += AggSum([], ({-1} * {s_c}));
  __SQL_SUM_AGGREGATE_1[R_A] := AggSum([R_A], AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[R_A, R_B] * (__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[S_B] * {S_B > R_A})))) * (__sub2 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mS2[S_B] * {S_B > R_A})))) * {R_B < __sub2} * {__cnt1 != 0})));
}

-- CHECK: DECLARE MAP __SQL_SUM_AGGREGATE_1_dom1[__DOM1_A:int]: int :=
-- CHECK: DECLARE MAP __SQL_SUM_AGGREGATE_1_cache1[R_A:int]: int :=
-- CHECK: DECLARE MAP __SQL_SUM_AGGREGATE_1_cache2[R_A:int]: int :=
-- CHECK: ON + R(r_a:int, r_b:int) {
-- CHECK: __SQL_SUM_AGGREGATE_1_dom1[r_a] += AggSum([], {1});
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1_cache1[r_a] += (AggSum([], ((__dom ^= __SQL_SUM_AGGREGATE_1_dom1[r_a]) * {__dom != 0} * AggSum([], (__SQL_SUM_AGGREGATE_1_mS1[S_B] * {S_B > r_a})))) + ({-1} * __SQL_SUM_AGGREGATE_1_cache1[r_a]));
-- CHECK: ON + S(s_b:int, s_c:int) {
-- CHECK: __SQL_SUM_AGGREGATE_1_cache2[R_A] += AggSum([R_A], ((__dom ^= __SQL_SUM_AGGREGATE_1_dom1[R_A]) * {__dom != 0} * {s_b > R_A} * AggSum([], {s_c})));
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1[R_A] := AggSum([R_A], AggSum([R_A], (__SQL_SUM_AGGREGATE_1_mR3[R_A, R_B] * (__cnt1 ^= __SQL_SUM_AGGREGATE_1_cache1[R_A]) * (__sub2 ^= __SQL_SUM_AGGREGATE_1_cache2[R_A]) * {R_B < __sub2} * {__cnt1 != 0})));
