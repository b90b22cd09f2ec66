-- M3 program (mode: tuple)
-- m3_view_cache (closed sums, closed_cache.py): PSP's re-evaluation, decomposed, multiplies closed
-- sums over one book each. A BIDS trigger cannot change the ASKS sums: they are kept in scalar
-- maps set by the ASKS triggers (after their last write to an ASKS map) and read by the BIDS ones.
-- RUN: m3_view_cache
-- CHECK: DECLARE MAP PSP_closed1[]: float :=
-- CHECK: DECLARE MAP PSP_closed2[]: int :=
-- CHECK: ON + BIDS(
-- CHECK: PSP_mBIDS4[bids_volume] += AggSum([], {1});
-- CHECK-NEXT: PSP_closed3[] := AggSum([], (PSP_mBIDS4[B_VOLUME] *
-- CHECK: PSP[] := AggSum([], ((PSP_closed1[] * PSP_closed3[]) + (PSP_closed2[] * PSP_closed4[])));
-- CHECK: ON + ASKS(
-- CHECK: PSP_mASKS3[asks_volume] += AggSum([], {asks_price});
-- CHECK-NEXT: PSP_closed1[] := AggSum([], (PSP_mASKS3[A_VOLUME] *
-- CHECK: PSP[] := AggSum([], ((PSP_closed1[] * PSP_closed3[]) + (PSP_closed2[] * PSP_closed4[])));
CREATE STREAM BIDS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) FROM FILE 'x.csv' LINE DELIMITED csv();
CREATE STREAM ASKS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float) FROM FILE 'x.csv' LINE DELIMITED csv();

DECLARE QUERY MAP PSP[]: float :=
  AggSum([], ((ASKS(A_T, A_ID, A_BROKER_ID, A_VOLUME, A_PRICE) * BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE) * (__sub1 ^= AggSum([], (BIDS(B1_T, B1_ID, B1_BROKER_ID, B1_VOLUME, B1_PRICE) * {B1_VOLUME}))) * (__sub2 ^= AggSum([], (ASKS(A1_T, A1_ID, A1_BROKER_ID, A1_VOLUME, A1_PRICE) * {A1_VOLUME}))) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)} * {A_PRICE}) + ({-1} * ASKS(A_T, A_ID, A_BROKER_ID, A_VOLUME, A_PRICE) * BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE) * (__sub1 ^= AggSum([], (BIDS(B1_T, B1_ID, B1_BROKER_ID, B1_VOLUME, B1_PRICE) * {B1_VOLUME}))) * (__sub2 ^= AggSum([], (ASKS(A1_T, A1_ID, A1_BROKER_ID, A1_VOLUME, A1_PRICE) * {A1_VOLUME}))) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)} * {B_PRICE})));
DECLARE MAP PSP_mBIDS1[]: float :=
  AggSum([], (BIDS(B1_T, B1_ID, B1_BROKER_ID, B1_VOLUME, B1_PRICE) * {B1_VOLUME}));
DECLARE MAP PSP_mASKS2[]: float :=
  AggSum([], (ASKS(A1_T, A1_ID, A1_BROKER_ID, A1_VOLUME, A1_PRICE) * {A1_VOLUME}));
DECLARE MAP PSP_mASKS3[A_VOLUME:float]: float :=
  AggSum([A_VOLUME], (ASKS(A_T, A_ID, A_BROKER_ID, A_VOLUME, A_PRICE) * {A_PRICE}));
DECLARE MAP PSP_mBIDS4[B_VOLUME:float]: int :=
  AggSum([B_VOLUME], BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE));
DECLARE MAP PSP_mASKS5[A_VOLUME:float]: int :=
  AggSum([A_VOLUME], ASKS(A_T, A_ID, A_BROKER_ID, A_VOLUME, A_PRICE));
DECLARE MAP PSP_mBIDS6[B_VOLUME:float]: float :=
  AggSum([B_VOLUME], (BIDS(B_T, B_ID, B_BROKER_ID, B_VOLUME, B_PRICE) * {B_PRICE}));

DECLARE RESULT QUERY_1 KEYS () VALUES (PSP:float FROM PSP);

ON + BIDS(bids_t:float, bids_id:int, bids_broker_id:int, bids_volume:float, bids_price:float) {
  PSP_mBIDS1[] += AggSum([], {bids_volume});
  PSP_mBIDS4[bids_volume] += AggSum([], {1});
  PSP_mBIDS6[bids_volume] += AggSum([], {bids_price});
  PSP[] := AggSum([], (AggSum([], (PSP_mASKS3[A_VOLUME] * PSP_mBIDS4[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)})) + AggSum([], ({-1} * PSP_mASKS5[A_VOLUME] * PSP_mBIDS6[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)}))));
}

ON - BIDS(bids_t:float, bids_id:int, bids_broker_id:int, bids_volume:float, bids_price:float) {
  PSP_mBIDS1[] += AggSum([], ({-1} * {bids_volume}));
  PSP_mBIDS4[bids_volume] += AggSum([], {-1});
  PSP_mBIDS6[bids_volume] += AggSum([], ({-1} * {bids_price}));
  PSP[] := AggSum([], (AggSum([], (PSP_mASKS3[A_VOLUME] * PSP_mBIDS4[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)})) + AggSum([], ({-1} * PSP_mASKS5[A_VOLUME] * PSP_mBIDS6[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)}))));
}

ON + ASKS(asks_t:float, asks_id:int, asks_broker_id:int, asks_volume:float, asks_price:float) {
  PSP_mASKS2[] += AggSum([], {asks_volume});
  PSP_mASKS3[asks_volume] += AggSum([], {asks_price});
  PSP_mASKS5[asks_volume] += AggSum([], {1});
  PSP[] := AggSum([], (AggSum([], (PSP_mASKS3[A_VOLUME] * PSP_mBIDS4[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)})) + AggSum([], ({-1} * PSP_mASKS5[A_VOLUME] * PSP_mBIDS6[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)}))));
}

ON - ASKS(asks_t:float, asks_id:int, asks_broker_id:int, asks_volume:float, asks_price:float) {
  PSP_mASKS2[] += AggSum([], ({-1} * {asks_volume}));
  PSP_mASKS3[asks_volume] += AggSum([], ({-1} * {asks_price}));
  PSP_mASKS5[asks_volume] += AggSum([], {-1});
  PSP[] := AggSum([], (AggSum([], (PSP_mASKS3[A_VOLUME] * PSP_mBIDS4[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)})) + AggSum([], ({-1} * PSP_mASKS5[A_VOLUME] * PSP_mBIDS6[B_VOLUME] * (__sub1 ^= AggSum([], PSP_mBIDS1[])) * (__sub2 ^= AggSum([], PSP_mASKS2[])) * {A_VOLUME > (0.0001 * __sub2)} * {B_VOLUME > (0.0001 * __sub1)}))));
}
