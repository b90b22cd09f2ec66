-- M3 program (mode: tuple)
-- k3_cse: a map lookup repeated under the same keys is read once and bound to a local
-- RUN: m3_to_k3 | k3_fuse | k3_cse
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

DECLARE QUERY MAP Q[]: int :=
  AggSum([], (R(A, B) * S(B, C) * S(B, C)));
DECLARE MAP M[B:int]: int :=
  AggSum([B], S(B, C));

DECLARE RESULT QR KEYS () VALUES (V:int FROM Q);

ON + R(a:int, b:int) {
  Q[] += AggSum([], (M[b] * M[b] * {a}));
}

ON + S(b:int, c:int) {
  M[b] += {1};
}

-- CHECK: trigger on_insert_R
-- CHECK-NEXT: let _cse1:int = M[b]
-- CHECK-NEXT: in
-- CHECK-NEXT: Q[] += ((_cse1 * _cse1) * a)
