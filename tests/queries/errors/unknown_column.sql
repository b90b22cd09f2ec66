-- error: unknown column Z @ 4:12
CREATE STREAM R(A int, B int);

SELECT SUM(Z) FROM R;
