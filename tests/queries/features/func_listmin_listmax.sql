-- LISTMIN / LISTMAX with two and three arguments, int->float promotion
CREATE STREAM R(A int, B int);

SELECT R.A, SUM(LISTMIN(R.A, R.B)) AS lo, SUM(LISTMAX(R.A, 2, R.B)) AS hi, SUM(LISTMAX(R.B, 2.5)) AS f
FROM R GROUP BY R.A;
