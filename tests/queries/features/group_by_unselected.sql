-- a GROUP BY column that is not selected is still a key column
CREATE STREAM R(A int, B int);

SELECT SUM(R.A) AS s FROM R GROUP BY R.B;
