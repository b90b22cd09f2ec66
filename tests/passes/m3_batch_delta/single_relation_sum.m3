-- M3 program (mode: batch)
-- m3_batch_delta (Hot Dog §5): the batch is filtered by the static conditions, projected and
-- pre-aggregated before the statements run; a TPC-H Q6-like sum keeps no key at all
-- RUN: m3_batch_delta
CREATE STREAM L(K int, P float, D float, Q float);

DECLARE QUERY MAP REV[]: float :=
  AggSum([], (L(K, P, D, Q) * {D >= 0.05} * {Q < 24} * {P} * {D}));

DECLARE RESULT QR KEYS () VALUES (REVENUE:float FROM REV);

ON BATCH L {
  REV[] += AggSum([], ((DELTA L)(K, P, D, Q) * {D >= 0.05} * {Q < 24} * {P} * {D}));
}

-- CHECK: ON BATCH L {
-- CHECK-NEXT: DELTA_L_1[] := AggSum([], ((DELTA L)(K, P, D, Q) * {D >= 0.05} * {Q < 24} * {P} * {D}));
-- CHECK-NEXT: REV[] += AggSum([], DELTA_L_1[]);
-- CHECK-NOT: (DELTA L)
