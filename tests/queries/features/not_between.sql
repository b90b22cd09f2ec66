-- NOT BETWEEN, with expressions as bounds
CREATE STREAM R(A int, B int);

SELECT COUNT(*) AS n FROM R WHERE R.A NOT BETWEEN R.B - 1 AND R.B + 1;
