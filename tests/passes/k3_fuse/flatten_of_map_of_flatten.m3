-- M3 program (mode: tuple)
-- k3_fuse rule flatten_of_map_of_flatten: {a} * {b} * M[b] nests two flatten-maps; bind associativity nests the second inside the first
-- RUN: m3_to_k3 | k3_fuse{rules=flatten_of_map_of_flatten}
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
  Q[] += ({a} * {b} * M[b]);
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK: flatten
-- CHECK-NEXT: map \(_v1:int) ->
-- CHECK-NEXT: flatten
-- CHECK-NEXT: map \(_v3:int) ->
-- CHECK: map \(_v2:int) -> ((_v1 * _v2),)
-- CHECK: singleton (b,)
-- CHECK-NEXT: over
-- CHECK-NEXT: singleton (a,)
