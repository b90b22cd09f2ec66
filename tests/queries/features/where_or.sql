-- OR of two comparisons
CREATE STREAM R(A int, B int);

SELECT R.B, COUNT(*) AS n FROM R WHERE R.A = 1 OR R.B = 2 GROUP BY R.B;
