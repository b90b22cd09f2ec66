-- error: syntax error @ 4:37
CREATE STREAM R(A int, B int);

SELECT SUM(R.A) FROM R WHERE (R.A = 1
