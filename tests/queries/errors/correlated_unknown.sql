-- error: unknown column X @ 6:49
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) FROM R
WHERE R.A < (SELECT SUM(S.C) FROM S WHERE S.B = X);
