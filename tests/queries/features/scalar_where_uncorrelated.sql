-- an uncorrelated scalar subquery in WHERE
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B, COUNT(*) AS n FROM R WHERE R.A > (SELECT COUNT(*) FROM S WHERE S.C > 3) GROUP BY R.B;
