-- two NATURAL JOINs in a row (on B, then on C)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT SUM(A * D) AS total FROM R NATURAL JOIN S NATURAL JOIN T;
