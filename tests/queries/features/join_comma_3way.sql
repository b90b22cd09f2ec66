-- 3-way comma join grouped by the first relation's column
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT R.A, SUM(T.D) AS total FROM R, S, T WHERE R.B = S.B AND S.C = T.C GROUP BY R.A;
