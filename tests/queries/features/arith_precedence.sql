-- + - * / precedence and parentheses
CREATE STREAM R(A int, B int);

SELECT R.A, SUM(R.A + R.B * 2 - R.A / 2) AS x, SUM((R.A + R.B) * (R.A - 1)) AS y FROM R GROUP BY R.A;
