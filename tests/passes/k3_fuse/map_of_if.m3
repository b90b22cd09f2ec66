-- M3 program (mode: tuple)
-- k3_fuse rule map_of_if: after filter_of_singleton the product maps over a conditional: one map per branch
-- RUN: m3_to_k3 | k3_fuse{rules=filter_of_singleton} | k3_fuse{rules=map_of_if}
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
  Q[] += ({a < b} * M[b]);
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK: flatten
-- CHECK-NEXT: if (a < b)
-- CHECK-NEXT: then
-- CHECK-NEXT: map \(_v2:int) ->
-- CHECK: else
-- CHECK-NEXT: map \(_v2:int) ->
