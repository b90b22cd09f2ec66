-- HAVING with a scalar subquery, IN list and OR
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B, SUM(R.A) AS s FROM R WHERE R.A IN (1, 2, 3) OR R.B = 0
GROUP BY R.B HAVING SUM(R.A) >= (SELECT COUNT(*) FROM S) / 2;
