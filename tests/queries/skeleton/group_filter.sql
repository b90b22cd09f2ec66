-- group-by with a filter and an arithmetic aggregate argument
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A * 2 + 1) AS total FROM R WHERE R.A > 2 GROUP BY R.B;
