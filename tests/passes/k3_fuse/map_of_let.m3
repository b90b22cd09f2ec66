-- M3 program (mode: tuple)
-- k3_fuse rule map_of_let: the sum term's map is over a let: the map moves into the let
-- RUN: m3_to_k3 | k3_fuse{rules=map_of_singleton,flatten_of_singleton} | k3_fuse{rules=map_of_let}
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
  Q[C] += (({a + b} * M2[b, C]) + M3[C]);
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK: union
-- CHECK-NEXT: let _v3:int = (a + b)
-- CHECK-NEXT: in
-- CHECK-NEXT: map \(C:int, _v6:int) -> (C, _v6)
