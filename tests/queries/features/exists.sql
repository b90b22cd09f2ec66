-- EXISTS with a correlated subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(R.B) AS s FROM R WHERE EXISTS (SELECT * FROM S WHERE S.B = R.B) GROUP BY R.A;
