-- M3 program (mode: batch)
-- dist_fuse (Hot Dog Appendix C.3): a block merges into an earlier block of the same mode when it
-- commutes with every block in between; the MR update joins the first dist block
-- RUN: m3_to_dist | dist_simplify | dist_blocks | dist_fuse
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP Q[]: int :=
  AggSum([], (R(A, B) * S(B, C) * {A} * {C}));
DECLARE MAP MS[B:int]: int :=
  AggSum([B], (S(B, C) * {C}));
DECLARE MAP MR[B:int]: int :=
  AggSum([B], (R(A, B) * {A}));

DECLARE RESULT QR KEYS () VALUES (V:int FROM Q);

ON BATCH R {
  Q[] += AggSum([], ((DELTA R)(A, B) * MS[B] * {A}));
  MR[B] += AggSum([B], ((DELTA R)(A, B) * {A}));
}

ON BATCH S {
  Q[] += AggSum([], ((DELTA S)(B, C) * MR[B] * {C}));
  MS[B] += AggSum([B], ((DELTA S)(B, C) * {C}));
}

-- CHECK: ON BATCH R {
-- CHECK: BLOCK dist {
-- CHECK-NEXT: TMP_3[] := AggSum([], (TMP_2[B] * MS[B])) @ Random;
-- CHECK-NEXT: MR[B] += TMP_2[B] @ Dist(B);
-- CHECK: BLOCK exchange {
-- CHECK-NEXT: TMP_4 := Gather(TMP_3);
-- CHECK: BLOCK local {
-- CHECK-NEXT: Q[] += TMP_4[] @ Local;
-- CHECK-NOT: BLOCK dist
-- CHECK: ON BATCH S {
