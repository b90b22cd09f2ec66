-- M3 program (mode: tuple)
-- imp_fuse_loops: AXF with its OR of disjoint ranges as a sum (calculus/exclusive.py): each BIDS
-- trigger walks AXF_mASKS1[b, *] twice and AXF_mASKS2[b, *] twice. The later loop over a slice
-- moves into the earlier one (its accumulator declared before it), and the four adds into
-- AXF[b] become one.
-- RUN: m3_to_k3 | k3_fuse | k3_cse | k3_to_imp | imp_guard_loops | imp_accumulate_loops | imp_fuse_loops
-- CHECK: void on_insert_BIDS(
-- CHECK-NEXT: float acc_loop_1 = 0.0;
-- CHECK-NEXT: float acc_loop_3 = 0.0;
-- CHECK-NEXT: foreach ([bids_broker_id, float k_1] -> float v_2 in AXF_mASKS1) {
-- CHECK-NEXT: if (((k_1 - bids_price) > 1.0)) {
-- CHECK-NEXT: acc_loop_1 = (acc_loop_1 + (v_2 * 1.0));
-- CHECK-NEXT: }
-- CHECK-NEXT: if (((bids_price - k_1) > 1.0)) {
-- CHECK-NEXT: acc_loop_3 = (acc_loop_3 + (v_2 * 1.0));
-- CHECK-NOT: in AXF_mASKS1
-- CHECK: in AXF_mASKS2) {
-- CHECK-NOT: in AXF_mASKS
-- CHECK: AXF[bids_broker_id] += (((acc_loop_1 + acc_loop_2) + acc_loop_3) + acc_loop_4);
-- CHECK-NEXT: AXF_mBIDS3[bids_broker_id, bids_price] += 1;
CREATE STREAM BIDS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) FROM FILE 'b.csv' LINE DELIMITED csv();
CREATE STREAM ASKS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) FROM FILE 'a.csv' LINE DELIMITED csv();

DECLARE QUERY MAP AXF[B_BROKER_ID:int]: float :=
  AggSum([B_BROKER_ID], ((ASKS(A_T, A_ID, B_BROKER_ID, A_VOLUME, A_PRICE) * BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE) * {(A_PRICE - B_PRICE) > 1} * {A_VOLUME}) + ({-1} * ASKS(A_T, A_ID, B_BROKER_ID, A_VOLUME, A_PRICE) * BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE) * {(A_PRICE - B_PRICE) > 1} * {B_VOLUME})));
DECLARE MAP AXF_mASKS1[ASKS_BROKER_ID:int, A_PRICE:float]: float :=
  AggSum([ASKS_BROKER_ID, A_PRICE], (ASKS(A_T, A_ID, ASKS_BROKER_ID, A_VOLUME, A_PRICE) * {A_VOLUME}));
DECLARE MAP AXF_mASKS2[ASKS_BROKER_ID:int, A_PRICE:float]: int :=
  AggSum([ASKS_BROKER_ID, A_PRICE], ASKS(A_T, A_ID, ASKS_BROKER_ID, A_VOLUME, A_PRICE));
DECLARE MAP AXF_mBIDS3[BIDS_BROKER_ID:int, B_PRICE:float]: int :=
  AggSum([BIDS_BROKER_ID, B_PRICE], BIDS(B_T, B_ID, BIDS_BROKER_ID, B_VOLUME, B_PRICE));
DECLARE MAP AXF_mBIDS4[BIDS_BROKER_ID:int, B_PRICE:float]: float :=
  AggSum([BIDS_BROKER_ID, B_PRICE], (BIDS(B_T, B_ID, BIDS_BROKER_ID, B_VOLUME, B_PRICE) * {B_VOLUME}));

DECLARE RESULT QUERY_1 KEYS (BROKER_ID:int) VALUES (AXF:float FROM AXF);

ON + BIDS(bids_t:float, bids_id:int, bids_broker_id:int, bids_volume:float, bids_price:float) {
  AXF[bids_broker_id] += AggSum([], (AXF_mASKS1[bids_broker_id, A_PRICE] * {(A_PRICE - bids_price) > 1}));
  AXF[bids_broker_id] += AggSum([], ({-1} * AXF_mASKS2[bids_broker_id, A_PRICE] * {(A_PRICE - bids_price) > 1} * {bids_volume}));
  AXF[bids_broker_id] += AggSum([], (AXF_mASKS1[bids_broker_id, A_PRICE] * {(bids_price - A_PRICE) > 1}));
  AXF[bids_broker_id] += AggSum([], ({-1} * AXF_mASKS2[bids_broker_id, A_PRICE] * {(bids_price - A_PRICE) > 1} * {bids_volume}));
  AXF_mBIDS3[bids_broker_id, bids_price] += AggSum([], {1});
  AXF_mBIDS4[bids_broker_id, bids_price] += AggSum([], {bids_volume});
}

ON - BIDS(bids_t:float, bids_id:int, bids_broker_id:int, bids_volume:float, bids_price:float) {
  AXF[bids_broker_id] += AggSum([], ({-1} * AXF_mASKS1[bids_broker_id, A_PRICE] * {(A_PRICE - bids_price) > 1}));
  AXF[bids_broker_id] += AggSum([], (AXF_mASKS2[bids_broker_id, A_PRICE] * {(A_PRICE - bids_price) > 1} * {bids_volume}));
  AXF_mBIDS3[bids_broker_id, bids_price] += AggSum([], {-1});
  AXF_mBIDS4[bids_broker_id, bids_price] += AggSum([], ({-1} * {bids_volume}));
}

ON + ASKS(asks_t:float, asks_id:int, asks_broker_id:int, asks_volume:float, asks_price:float) {
  AXF[asks_broker_id] += AggSum([], (AXF_mBIDS3[asks_broker_id, B_PRICE] * {(asks_price - B_PRICE) > 1} * {asks_volume}));
  AXF[asks_broker_id] += AggSum([], ({-1} * AXF_mBIDS4[asks_broker_id, B_PRICE] * {(asks_price - B_PRICE) > 1}));
  AXF_mASKS1[asks_broker_id, asks_price] += AggSum([], {asks_volume});
  AXF_mASKS2[asks_broker_id, asks_price] += AggSum([], {1});
}

ON - ASKS(asks_t:float, asks_id:int, asks_broker_id:int, asks_volume:float, asks_price:float) {
  AXF[asks_broker_id] += AggSum([], ({-1} * AXF_mBIDS3[asks_broker_id, B_PRICE] * {(asks_price - B_PRICE) > 1} * {asks_volume}));
  AXF[asks_broker_id] += AggSum([], (AXF_mBIDS4[asks_broker_id, B_PRICE] * {(asks_price - B_PRICE) > 1}));
  AXF_mASKS1[asks_broker_id, asks_price] += AggSum([], ({-1} * {asks_volume}));
  AXF_mASKS2[asks_broker_id, asks_price] += AggSum([], {-1});
}
