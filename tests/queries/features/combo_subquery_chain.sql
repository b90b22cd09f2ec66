-- a FROM subquery with a correlated WHERE subquery and an IN subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT q.A, SUM(q.C) AS s
FROM (SELECT R.A, S.C FROM R JOIN S ON R.B = S.B WHERE S.C IN (SELECT T.C FROM T)) q
WHERE q.A < (SELECT COUNT(*) FROM T WHERE T.D >= q.C)
GROUP BY q.A;
