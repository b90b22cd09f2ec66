-- aggregates skip rows whose argument is NULL (an empty correlated scalar subquery)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(R.B + (SELECT SUM(S.C) FROM S WHERE S.B = R.B)) AS s,
       COUNT(R.B * (SELECT SUM(S.C) FROM S WHERE S.B = R.B)) AS n,
       AVG(R.B - (SELECT AVG(S.C) FROM S WHERE S.B = R.B)) AS av
FROM R GROUP BY R.A;
