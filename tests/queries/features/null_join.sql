-- NULLs: a join on nullable columns never matches NULL with NULL
CREATE STREAM R(A int, B int NULL);
CREATE STREAM S(B int NULL, C int NULL);

SELECT R.A, SUM(S.C) AS s, COUNT(*) AS n FROM R, S WHERE R.B = S.B GROUP BY R.A;
SELECT S.C, COUNT(*) AS n FROM R NATURAL JOIN S GROUP BY S.C;
