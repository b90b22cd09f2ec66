-- an uncorrelated single-row lookup (issue 12) over a one-row FROM subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(*) AS n FROM R
WHERE R.B <= (SELECT X.n FROM (SELECT COUNT(*) AS n FROM S) X)
GROUP BY R.A;
