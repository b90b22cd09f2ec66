-- NULLs: an empty correlated scalar subquery in a result column and a GROUP BY key is NULL
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, (SELECT SUM(S.C) FROM S WHERE S.B = R.B) AS s FROM R;
SELECT R.B, (SELECT MAX(S.C) FROM S WHERE S.B = R.B) AS m, COUNT(*) AS n FROM R GROUP BY R.B, (SELECT MAX(S.C) FROM S WHERE S.B = R.B);
