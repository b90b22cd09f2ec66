-- M3 program (mode: tuple)
-- m3_range_index: an inequality join's deltas loop over the other side's (group, price) map under
-- an inequality with the event; each becomes one interval sum per group (the group count map enumerates
-- them) between ends computed once per statement: rix_span for S_B - 0.05 <= r_b (searched as IEEE rounds it),
-- rix_cut for R_B >= s_b - 0.05
-- RUN: m3_range_index
CREATE STREAM R(A int, B float);
CREATE STREAM S(A int, B float);

DECLARE QUERY MAP __SQL_COUNT_AGGREGATE_1[R_A:int, S_A:int]: int :=
  AggSum([R_A, S_A], (R(R_A, R_B) * S(S_A, S_B) * {R_B >= (S_B - 0.05)}));
DECLARE MAP __SQL_COUNT_AGGREGATE_1_mS1[S_A:int, S_B:float]: int :=
  AggSum([S_A, S_B], S(S_A, S_B));
DECLARE MAP __SQL_COUNT_AGGREGATE_1_mR2[R_A:int, R_B:float]: int :=
  AggSum([R_A, R_B], R(R_A, R_B));

DECLARE RESULT QUERY_1 KEYS (A:int, A_2:int) VALUES (__SQL_COUNT_AGGREGATE_1:int FROM __SQL_COUNT_AGGREGATE_1);

ON + R(r_a:int, r_b:float) {
  __SQL_COUNT_AGGREGATE_1[r_a, S_A] += AggSum([S_A], (__SQL_COUNT_AGGREGATE_1_mS1[S_A, S_B] * {r_b >= (S_B - 0.05)}));
  __SQL_COUNT_AGGREGATE_1_mR2[r_a, r_b] += AggSum([], {1});
}

ON - R(r_a:int, r_b:float) {
  __SQL_COUNT_AGGREGATE_1[r_a, S_A] += AggSum([S_A], ({-1} * __SQL_COUNT_AGGREGATE_1_mS1[S_A, S_B] * {r_b >= (S_B - 0.05)}));
  __SQL_COUNT_AGGREGATE_1_mR2[r_a, r_b] += AggSum([], {-1});
}

ON + S(s_a:int, s_b:float) {
  __SQL_COUNT_AGGREGATE_1[R_A, s_a] += AggSum([R_A], (__SQL_COUNT_AGGREGATE_1_mR2[R_A, R_B] * {R_B >= (s_b - 0.05)}));
  __SQL_COUNT_AGGREGATE_1_mS1[s_a, s_b] += AggSum([], {1});
}

ON - S(s_a:int, s_b:float) {
  __SQL_COUNT_AGGREGATE_1[R_A, s_a] += AggSum([R_A], ({-1} * __SQL_COUNT_AGGREGATE_1_mR2[R_A, R_B] * {R_B >= (s_b - 0.05)}));
  __SQL_COUNT_AGGREGATE_1_mS1[s_a, s_b] += AggSum([], {-1});
}

-- CHECK: DECLARE MAP __SQL_COUNT_AGGREGATE_1_mS1_rix[S_A:int, __rix_l:int, __rix_n:int]: int :=
-- CHECK: DECLARE MAP __SQL_COUNT_AGGREGATE_1_mS1_rixg[S_A:int]: int :=
-- CHECK: ON + R(r_a:int, r_b:float) {
-- CHECK-NEXT: __SQL_COUNT_AGGREGATE_1[r_a, S_A] += AggSum([S_A], ((__rix_s1 ^= {#rix_span:int(7, r_b, 0.05)}) * (__rix_s2 ^= {#rix_span:int(23, r_b, 0.05)}) * AggSum([S_A], (
-- CHECK-NOT: {r_b >= (S_B - 0.05)}
-- CHECK: (__rix_g ^= __SQL_COUNT_AGGREGATE_1_mS1_rixg[S_A]) * {__rix_g != 0} * (__rix_v ^= {#rix_interval:int('__SQL_COUNT_AGGREGATE_1_mS1_rix', __rix_lo, __rix_hi, S_A)}) * {__rix_v != 0} * {__rix_v}
-- CHECK: ON + S(s_a:int, s_b:float) {
-- CHECK-NEXT: __SQL_COUNT_AGGREGATE_1[R_A, s_a] += AggSum([R_A], ((__rix_s1 ^= {#rix_cut:int(1, (s_b - 0.05))})
-- CHECK-NEXT: __SQL_COUNT_AGGREGATE_1_mS1_rixg[s_a] +=
-- CHECK-NEXT: __SQL_COUNT_AGGREGATE_1_mS1[s_a, s_b] += AggSum([], {1});
-- CHECK-NEXT: __SQL_COUNT_AGGREGATE_1_mS1_rix[s_a, __rix_l, __rix_n] +=
