-- a FROM subquery's aggregate value compared with its own group key (unification must not
-- leak the group variable into the aggregate's body)
CREATE STREAM R(A int, B int);

SELECT COUNT(*) AS n FROM (SELECT R.A AS X, SUM(R.A) AS S FROM R GROUP BY R.A) q WHERE q.S = q.X;
