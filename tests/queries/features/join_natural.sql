-- NATURAL JOIN equates the shared column B
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) AS n, SUM(A * C) AS ac FROM R NATURAL JOIN S;
