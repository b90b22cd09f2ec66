-- IN over a correlated subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, R.B FROM R WHERE R.B IN (SELECT S.B FROM S WHERE S.C > R.A);
