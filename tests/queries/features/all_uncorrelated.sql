-- >= ALL over an uncorrelated subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(R.B) AS s FROM R WHERE R.A >= ALL (SELECT S.B FROM S WHERE S.C < 3);
