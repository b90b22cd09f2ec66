-- a non-aggregate subquery in FROM with expression columns
CREATE STREAM R(A int, B int);

SELECT q.X, COUNT(*) AS n FROM (SELECT R.A + 1 AS X, R.B FROM R WHERE R.B > 1) q GROUP BY q.X;
