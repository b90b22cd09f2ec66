-- an aggregate subquery joined to a stream
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT S.C, SUM(q.n) AS total FROM (SELECT R.B, COUNT(*) AS n FROM R GROUP BY R.B) q, S
WHERE q.B = S.B GROUP BY S.C;
