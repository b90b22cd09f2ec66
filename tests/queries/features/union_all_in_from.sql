-- an aggregate over a UNION ALL subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT u.X, COUNT(*) AS n, SUM(u.Y) AS s
FROM (SELECT R.A AS X, R.B AS Y FROM R UNION ALL SELECT S.C AS X, S.B AS Y FROM S) u GROUP BY u.X;
