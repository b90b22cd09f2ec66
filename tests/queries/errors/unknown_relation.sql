-- error: unknown relation U @ 4:22
CREATE STREAM R(A int, B int);

SELECT SUM(R.A) FROM U;
