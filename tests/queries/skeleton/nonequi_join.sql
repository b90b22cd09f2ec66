-- A join on an inequality: the R-side map must stay keyed by S.B (input-variable extraction).
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(R.A * S.C) AS total FROM R, S WHERE R.B < S.B;
