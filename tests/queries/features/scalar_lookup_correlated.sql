-- a correlated single-row lookup (issue 12): the value of the one matching row, NULL (the
-- comparison unknown) where there is none
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(R.B) AS s FROM R
WHERE R.A < (SELECT G.total FROM (SELECT S.B, SUM(S.C) AS total FROM S GROUP BY S.B) G WHERE G.B = R.B)
   OR NOT (R.A <> (SELECT G2.n FROM (SELECT S.C, COUNT(*) AS n FROM S GROUP BY S.C) G2 WHERE G2.C = R.B))
GROUP BY R.A;
