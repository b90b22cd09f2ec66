-- an uncorrelated scalar subquery combined with an aggregate in a target
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B, SUM(R.A) / LISTMAX(1, (SELECT COUNT(*) FROM S)) AS ratio FROM R GROUP BY R.B;
