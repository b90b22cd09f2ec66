-- '/' is always float division, also between integers.
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A / 4) AS quarter, SUM(R.A * R.B / 3.0) AS third FROM R GROUP BY R.B;
