-- M3 program (mode: tuple)
-- k3_fuse rule fold_of_singleton: the nested AggSum([], M[b]) folds a one-element bag: one step, 0 + M[b]
-- RUN: m3_to_k3 | k3_fuse{rules=fold_of_singleton}
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP Q[]: int :=
  AggSum([], (R(A, B) * S(B, C)));
DECLARE MAP M[B:int]: int :=
  AggSum([B], S(B, C));
DECLARE MAP M2[B:int, C:int]: int :=
  S(B, C);
DECLARE MAP M3[C:int]: int :=
  AggSum([C], S(B, C));

DECLARE RESULT QR KEYS () VALUES (V:int FROM Q);

ON + R(a:int, b:int) {
  Q[] += (AggSum([], M[b]) * {a});
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK-NOT: aggregate
-- CHECK: singleton ((0 + M[b]),)
