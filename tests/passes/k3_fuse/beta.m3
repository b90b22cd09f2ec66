-- M3 program (mode: tuple)
-- k3_fuse rule beta: {a + b} * {a < b}: map_of_singleton binds a + b in a let (its use is under a lambda); once the
-- inner map is gone the use is not, and beta inlines it
-- RUN: m3_to_k3 | k3_fuse{rules=map_of_singleton} | k3_fuse{rules=filter_of_singleton,map_of_if,map_of_singleton,map_of_empty} | k3_fuse{rules=beta}
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
  Q[] += ({a + b} * {a < b});
}

ON + S(b:int, c:int) {
  M[b] += {1};
  M2[b, c] += {1};
  M3[c] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK-NOT: let _v
-- CHECK: if (a < b)
-- CHECK-NEXT: then
-- CHECK-NEXT: singleton (((a + b) * 1),)
