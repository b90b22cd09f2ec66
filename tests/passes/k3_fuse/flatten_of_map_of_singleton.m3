-- M3 program (mode: tuple)
-- k3_fuse rule flatten_of_map_of_singleton: M2[b, C] * {a} yields one-element bags per entry of M2: a plain map
-- RUN: m3_to_k3 | k3_fuse{rules=map_of_singleton} | k3_fuse{rules=flatten_of_map_of_singleton}
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP Q[C:int]: int :=
  AggSum([C], (R(A, B) * S(B, C)));
DECLARE MAP M[B:int]: int :=
  AggSum([B], S(B, C));
DECLARE MAP M2[B:int, C:int]: int :=
  S(B, C);
DECLARE MAP M3[C:int]: int :=
  AggSum([C], S(B, C));

DECLARE RESULT QR KEYS (C:int) VALUES (V:int FROM Q);

ON + R(a:int, b:int) {
  Q[C] += (M2[b, C] * {a});
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK-NOT: flatten
-- CHECK: Q[C] += _v5
-- CHECK-NEXT: over
-- CHECK-NEXT: map \(C:int, _v3:int) -> (C, (_v3 * a))
