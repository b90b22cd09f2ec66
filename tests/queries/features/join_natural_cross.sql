-- NATURAL JOIN without shared columns is a cross product
CREATE STREAM R(A int, B int);
CREATE STREAM T(C int, D int);

SELECT R.A, T.D, COUNT(*) AS n FROM R NATURAL JOIN T GROUP BY R.A, T.D;
