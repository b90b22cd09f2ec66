-- HAVING on the group's sum
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A) AS s FROM R GROUP BY R.B HAVING SUM(R.A) > 3;
