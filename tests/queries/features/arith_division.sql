-- '/' is float division, also between integers; a guarded divisor
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A) / LISTMAX(1, COUNT(*)) AS ratio, SUM(R.A / 3) AS thirds FROM R GROUP BY R.B;
