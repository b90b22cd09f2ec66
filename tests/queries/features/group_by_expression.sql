-- GROUP BY an expression
CREATE STREAM R(A int, B int);

SELECT R.A + R.B AS s, COUNT(*) AS n FROM R GROUP BY R.A + R.B;
