-- error: unknown column TOTAL @ 4:34
CREATE STREAM R(A int, B int);

SELECT R.A AS total FROM R WHERE TOTAL > 1;
