-- SUM(x) / LISTMAX(1, SUM(y)) over a join
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(S.C * 1.0) / LISTMAX(1, SUM(R.B)) AS ratio FROM R, S WHERE R.B = S.B GROUP BY R.A;
