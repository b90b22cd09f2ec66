-- a cross product (no join condition) with a filter on each side
CREATE STREAM R(A int, B int);
CREATE STREAM T(C int, D int);

SELECT SUM(R.A + T.D) AS s FROM R, T WHERE R.B > 2 AND T.C < 3;
