-- an aggregate subquery in FROM, read by a non-aggregate outer query
CREATE STREAM R(A int, B int);

SELECT q.B, q.total FROM (SELECT R.B, SUM(R.A) AS total FROM R GROUP BY R.B) q;
