-- op ALL (subquery), true when the subquery is empty
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(*) AS n FROM R WHERE R.A > ALL (SELECT S.C FROM S WHERE S.B = R.B) GROUP BY R.A;
