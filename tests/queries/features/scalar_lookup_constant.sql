-- a scalar subquery that is not an aggregate (issue 12): a constant SELECT without FROM
CREATE STREAM R(A int, B int);

SELECT R.A, COUNT(*) AS n, SUM(R.B * (SELECT 2)) AS s FROM R
WHERE R.B = (SELECT 3) OR R.A < (SELECT 2 + 1)
GROUP BY R.A;
