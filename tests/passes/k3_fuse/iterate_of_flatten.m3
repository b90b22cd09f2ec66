-- M3 program (mode: tuple)
-- k3_fuse rule iterate_of_flatten: Q[] += {a} * M[b] loops over a flatten: a nested loop instead
-- RUN: m3_to_k3 | k3_fuse{rules=iterate_of_flatten}
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
  Q[] += ({a} * M[b]);
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK-NEXT: iterate \(_v1:int) ->
-- CHECK-NEXT: iterate \(_v3:int) ->
-- CHECK-NEXT: Q[] += _v3
-- CHECK-NOT: flatten
-- CHECK: }
