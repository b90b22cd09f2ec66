-- MIN and MAX per group: must stay correct under deletions
CREATE STREAM R(A int, B int);

SELECT R.B, MIN(R.A) AS lo, MAX(R.A) AS hi FROM R GROUP BY R.B;
