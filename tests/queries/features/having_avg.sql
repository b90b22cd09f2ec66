-- HAVING with AVG over a join
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(S.C) AS s FROM R, S WHERE R.B = S.B GROUP BY R.A HAVING AVG(S.C) > 2.5;
