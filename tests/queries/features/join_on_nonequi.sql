-- JOIN ... ON with an equality and an inequality
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT S.C, COUNT(*) AS n FROM R JOIN S ON R.B = S.B AND R.A < S.C GROUP BY S.C;
