-- GROUP BY a select alias
CREATE STREAM R(A int, B int);

SELECT R.A * 2 AS dbl, SUM(R.B) AS total FROM R GROUP BY dbl;
