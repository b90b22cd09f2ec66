-- MIN in a correlated scalar subquery (TPC-H Q2 style)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B, COUNT(*) AS n FROM R, S
WHERE R.B = S.B AND S.C = (SELECT MIN(s2.C) FROM S s2 WHERE s2.B = R.B) GROUP BY R.B;
