-- ORDER BY + LIMIT over a total order (the group key)
CREATE STREAM R(A int, B int);

SELECT R.A, COUNT(*) AS n, SUM(R.B) AS s FROM R GROUP BY R.A ORDER BY R.A LIMIT 3;
