-- DISTINCT rows counted by an outer aggregate
CREATE STREAM R(A int, B int);

SELECT q.B, COUNT(*) AS n FROM (SELECT DISTINCT R.A, R.B FROM R) q GROUP BY q.B;
