-- a correlated scalar subquery in WHERE (0 over no rows)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(R.B) AS s FROM R WHERE R.A < (SELECT SUM(S.C) FROM S WHERE S.B = R.B) GROUP BY R.A;
