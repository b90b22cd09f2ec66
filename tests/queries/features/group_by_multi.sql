-- GROUP BY two columns
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, S.C, SUM(R.B) AS s FROM R, S WHERE R.B = S.B GROUP BY R.A, S.C;
