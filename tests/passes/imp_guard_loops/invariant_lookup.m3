-- M3 program (mode: tuple)
-- imp_guard_loops: TPC-H Q17's shape (SUM(price) of the lines of parts with a brand whose quantity is
-- under 0.2 x the part's average). Each L trigger walks the slice mL1[pk, *] twice, every write
-- multiplied by mP2[pk] (the brand filter, 0 for most parts): the loops run only when it is nonzero.
-- RUN: m3_to_k3 | k3_fuse | k3_cse | k3_to_imp | imp_guard_loops
-- CHECK: void on_insert_L(
-- CHECK: float guard_1 = (float)__SQL_SUM_AGGREGATE_1_mP2[l_pk];
-- CHECK-NEXT: if ((guard_1 != 0.0)) {
-- CHECK-NEXT: foreach ([l_pk, float k_6] -> float v_7 in __SQL_SUM_AGGREGATE_1_mL1) {
-- CHECK: __SQL_SUM_AGGREGATE_1[] += (((v_7 * guard_1) * 1.0) * 1.0);
-- CHECK: float guard_2 = (float)__SQL_SUM_AGGREGATE_1_mP2[l_pk];
-- CHECK-NEXT: if ((guard_2 != 0.0)) {
-- CHECK: void on_delete_L(
-- CHECK: if ((guard_1 != 0.0)) {
CREATE STREAM L(PK int, QTY float, PRICE float);
CREATE STREAM P(PK int, BRAND int);

DECLARE QUERY MAP __SQL_SUM_AGGREGATE_1[]: float :=
  AggSum([], (L(P_PK, L_QTY, L_PRICE) * P(P_PK, P_BRAND) * (__sub4 ^= AggSum([], ({0.2} * (__agg1 ^= AggSum([], ((__n3 ^= AggSum([], (L(L2_PK, L2_QTY, L2_PRICE) * {L2_PK = P_PK}))) * (__s2 ^= AggSum([], (L(L2_PK, L2_QTY, L2_PRICE) * {L2_PK = P_PK} * {L2_QTY}))) * {__s2 / #listmax:int(1, __n3)}))) * {__agg1}))) * {L_QTY < __sub4} * {P_BRAND = 23} * {L_PRICE}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mL1[L_PK:int, L_QTY:float]: float :=
  AggSum([L_PK, L_QTY], (L(L_PK, L_QTY, L_PRICE) * {L_PRICE}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mP2[P_PK:int]: int :=
  AggSum([P_PK], (P(P_PK, P_BRAND) * {P_BRAND = 23}));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mL3[L_PK:int]: int :=
  AggSum([L_PK], L(L_PK, L2_QTY, L2_PRICE));
DECLARE MAP __SQL_SUM_AGGREGATE_1_mL4[L_PK:int]: float :=
  AggSum([L_PK], (L(L_PK, L2_QTY, L2_PRICE) * {L2_QTY}));

DECLARE RESULT QUERY_1 KEYS () VALUES (__SQL_SUM_AGGREGATE_1:float FROM __SQL_SUM_AGGREGATE_1);

ON + L(l_pk:int, l_qty:float, l_price:float) {
  __SQL_SUM_AGGREGATE_1[] += AggSum([], (__SQL_SUM_AGGREGATE_1_mL1[l_pk, L_QTY] * __SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL3[l_pk] + {1}))) * (__s2 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL4[l_pk] + {l_qty}))) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4}));
  __SQL_SUM_AGGREGATE_1[] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mL1[l_pk, L_QTY] * __SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL3[l_pk])) * (__s2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL4[l_pk])) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4}));
  __SQL_SUM_AGGREGATE_1[] += AggSum([], (__SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL3[l_pk] + {1}))) * (__s2 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL4[l_pk] + {l_qty}))) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {l_qty < __sub4} * {l_price}));
  __SQL_SUM_AGGREGATE_1_mL1[l_pk, l_qty] += AggSum([], {l_price});
  __SQL_SUM_AGGREGATE_1_mL3[l_pk] += AggSum([], {1});
  __SQL_SUM_AGGREGATE_1_mL4[l_pk] += AggSum([], {l_qty});
}

ON - L(l_pk:int, l_qty:float, l_price:float) {
  __SQL_SUM_AGGREGATE_1[] += AggSum([], (__SQL_SUM_AGGREGATE_1_mL1[l_pk, L_QTY] * __SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL3[l_pk] + {-1}))) * (__s2 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL4[l_pk] + ({-1} * {l_qty})))) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4}));
  __SQL_SUM_AGGREGATE_1[] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mL1[l_pk, L_QTY] * __SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL3[l_pk])) * (__s2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL4[l_pk])) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4}));
  __SQL_SUM_AGGREGATE_1[] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mP2[l_pk] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL3[l_pk] + {-1}))) * (__s2 ^= AggSum([], (__SQL_SUM_AGGREGATE_1_mL4[l_pk] + ({-1} * {l_qty})))) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {l_qty < __sub4} * {l_price}));
  __SQL_SUM_AGGREGATE_1_mL1[l_pk, l_qty] += AggSum([], ({-1} * {l_price}));
  __SQL_SUM_AGGREGATE_1_mL3[l_pk] += AggSum([], {-1});
  __SQL_SUM_AGGREGATE_1_mL4[l_pk] += AggSum([], ({-1} * {l_qty}));
}

ON + P(p_pk:int, p_brand:int) {
  __SQL_SUM_AGGREGATE_1[] += AggSum([], (__SQL_SUM_AGGREGATE_1_mL1[p_pk, L_QTY] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL3[p_pk])) * (__s2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL4[p_pk])) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4} * {p_brand = 23}));
  __SQL_SUM_AGGREGATE_1_mP2[p_pk] += AggSum([], {p_brand = 23});
}

ON - P(p_pk:int, p_brand:int) {
  __SQL_SUM_AGGREGATE_1[] += AggSum([], ({-1} * __SQL_SUM_AGGREGATE_1_mL1[p_pk, L_QTY] * (__sub4 ^= AggSum([], AggSum([], ({0.2} * (__agg1 ^= AggSum([], AggSum([], ((__n3 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL3[p_pk])) * (__s2 ^= AggSum([], __SQL_SUM_AGGREGATE_1_mL4[p_pk])) * {__s2 / #listmax:int(1, __n3)})))) * {__agg1})))) * {L_QTY < __sub4} * {p_brand = 23}));
  __SQL_SUM_AGGREGATE_1_mP2[p_pk] += AggSum([], ({-1} * {p_brand = 23}));
}
