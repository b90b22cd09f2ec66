-- grouped 2-way join with COUNT(*) and a SUM (two value columns of one result)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(*) AS cnt, SUM(S.C) AS total FROM R, S WHERE R.B = S.B GROUP BY R.A;
