-- EXISTS over an uncorrelated subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(R.A) AS s FROM R WHERE EXISTS (SELECT S.B FROM S WHERE S.C > 3);
