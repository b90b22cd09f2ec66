-- HAVING with an empty uncorrelated scalar subquery (NULL: no group passes, NOT included),
-- and a result value that is a product with one (NULL there reads as 0)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B, SUM(R.A) AS s FROM R GROUP BY R.B
HAVING NOT (SUM(R.A) < (SELECT SUM(S.C) FROM S WHERE S.C > 3));

SELECT R.B, SUM(R.A) * (SELECT SUM(S.C) FROM S WHERE S.C > 4) AS p FROM R GROUP BY R.B;
