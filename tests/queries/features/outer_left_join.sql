-- Outer joins: LEFT JOIN (unmatched rows padded with NULLs), maintained incrementally
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, S.C, COUNT(*) AS n FROM R LEFT JOIN S ON R.B = S.B GROUP BY R.A, S.C;
SELECT R.A, SUM(S.C) AS s, COUNT(S.C) AS m FROM R LEFT OUTER JOIN S ON R.B = S.B AND S.C > 1 GROUP BY R.A;
SELECT COUNT(*) AS unmatched FROM R LEFT JOIN S ON R.B = S.B WHERE S.B IS NULL;
