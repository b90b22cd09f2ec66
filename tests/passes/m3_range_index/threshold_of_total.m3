-- M3 program (mode: tuple)
-- m3_range_index: the nested SUM correlated by the range R2_B > R_B under a threshold on the total
-- becomes a descent (rix_bound, computed once per statement: its threshold reads only scalar maps) and an interval sum (rix_interval) over ordered indexes kept by one
-- loop statement per update (RIX_LEVELS), with the nested-loop form as the fallback for negative sums
-- RUN: m3_range_index
CREATE STREAM R(A int, B float, C float);

DECLARE QUERY MAP __SQL_SUM_AGGREGATE_1[]: float :=
  AggSum([], (R(R_A, R_B, R_C) * (__cnt1 ^= AggSum([], (R(R2_A, R2_B, R2_C) * {R2_B > R_B}))) * (__sub2 ^= AggSum([], (R(R3_A, R3_B, R3_C) * {R3_C}))) * (__sub3 ^= AggSum([], (R(R2_A, R2_B, R2_C) * {R2_B > R_B} * {R2_C}))) * {(0.5 * __sub2) > __sub3} * {__cnt1 != 0} * {R_C}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mR1[R2_B:float]: int :=
  AggSum([R2_B], R(R2_A, R2_B, R2_C));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mR2[]: float :=
  AggSum([], (R(R3_A, R3_B, R3_C) * {R3_C}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mR3[R2_B:float]: float :=
  AggSum([R2_B], (R(R2_A, R2_B, R2_C) * {R2_C}));

DECLARE RESULT QUERY_1 KEYS () VALUES (__SQL_SUM_AGGREGATE_1:float FROM __SQL_SUM_AGGREGATE_1);

ON + R(r_a:int, r_b:float, r_c:float) {
  __SQL_SUM_AGGREGATE_1_mR1[r_b] += AggSum([], {1});
  __SQL_SUM_AGGREGATE_1_mR2[] += AggSum([], {r_c});
  __SQL_SUM_AGGREGATE_1_mR3[r_b] += AggSum([], {r_c});
  __SQL_SUM_AGGREGATE_1[] := AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR3[R_B] * (__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR1[R2_B] * {R2_B > R_B})))) * (__sub2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mR2[])) * (__sub3 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR3[R2_B] * {R2_B > R_B})))) * {(0.5 * __sub2) > __sub3} * {__cnt1 != 0})));
}

ON - R(r_a:int, r_b:float, r_c:float) {
  __SQL_SUM_AGGREGATE_1_mR1[r_b] += AggSum([], {-1});
  __SQL_SUM_AGGREGATE_1_mR2[] += AggSum([], ({-1} * {r_c}));
  __SQL_SUM_AGGREGATE_1_mR3[r_b] += AggSum([], ({-1} * {r_c}));
  __SQL_SUM_AGGREGATE_1[] := AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR3[R_B] * (__cnt1 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR1[R2_B] * {R2_B > R_B})))) * (__sub2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mR2[])) * (__sub3 ^= AggSum([], AggSum([], (__SQL_SUM_AGGREGATE_1_mR3[R2_B] * {R2_B > R_B})))) * {(0.5 * __sub2) > __sub3} * {__cnt1 != 0})));
}

-- CHECK: DECLARE MAP RIX_LEVELS[__rix_l:int]: int :=
-- CHECK: DECLARE MAP __SQL_SUM_AGGREGATE_1_mR3_rix[__rix_l:int, __rix_n:int]: float :=
-- CHECK: ON + R(r_a:int, r_b:float, r_c:float) {
-- CHECK: __SQL_SUM_AGGREGATE_1_mR3_neg[] +=
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1_mR3[r_b] += AggSum([], {r_c});
-- CHECK-NEXT: __SQL_SUM_AGGREGATE_1_mR3_rix[__rix_l, __rix_n] += AggSum([__rix_l, __rix_n], (AggSum([r_b], AggSum([], {r_c})) * RIX_LEVELS[__rix_l] * (__rix_n ^= {#rix_node:int(#rix_key:int(r_b), __rix_l)})));
-- CHECK-NEXT: (__rix_p1 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mR2[])) * (__rix_s2 ^= {#rix_bound:int('__SQL_SUM_AGGREGATE_1_mR3_rix', 12, (0.5 * __rix_p1))}) * (__rix_s3 ^= {#rix_bound:int('__SQL_SUM_AGGREGATE_1_mR1_rix', 0, 0)}) * AggSum([], ((__rix_bad ^= (__SQL_SUM_AGGREGATE_1_mR1_neg[] + __SQL_SUM_AGGREGATE_1_mR3_neg[])) * (({__rix_bad = 0} * AggSum([], ((__sub2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mR2[])) * (__rix_b1 ^= {__rix_s2}) * (__rix_b2 ^= {__rix_s3}) * (__rix_lo ^= {__rix_b1}) * (__rix_hi ^= {__rix_b2}) * {#rix_interval:float('__SQL_SUM_AGGREGATE_1_mR3_rix', __rix_lo, __rix_hi)}
-- CHECK: ON SYSTEM READY {
-- CHECK-NEXT: RIX_LEVELS[__rix_l] := AggSum([__rix_l], ((__rix_l ^= {0}) + (__rix_l ^= {1})
