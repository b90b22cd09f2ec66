-- a chain of JOIN ... ON, one with INNER
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT SUM(R.A * T.D) AS total FROM R JOIN S ON R.B = S.B INNER JOIN T ON S.C = T.C;
