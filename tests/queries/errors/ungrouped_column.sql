-- error: must appear in GROUP BY @ 4:8
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A) FROM R;
