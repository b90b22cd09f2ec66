-- a self-join through aliases, grouped
CREATE STREAM R(A int, B int);

SELECT r1.A, COUNT(*) AS n FROM R r1, R AS r2 WHERE r1.B = r2.A GROUP BY r1.A;
