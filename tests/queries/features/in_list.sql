-- IN over a value list
CREATE STREAM R(A int, B int);

SELECT R.B, COUNT(*) AS n FROM R WHERE R.A IN (1, 3, 5) GROUP BY R.B;
