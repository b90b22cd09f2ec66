-- M3 program (mode: tuple)
-- k3_fuse rule fold_of_map: the nested AggSum([], M2[b, C]) folds the slice mapped to (C, v): the fold reads the slice
-- RUN: m3_to_k3 | k3_fuse{rules=fold_of_map}
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
  Q[] += (AggSum([], M2[b, C]) * {a});
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK: aggregate init 0 \(_acc3:int, _k1:int, C:int, _v2:int) -> (_acc3 + _v2)
-- CHECK-NEXT: over
-- CHECK-NEXT: slice M2[b, *]
