-- a correlated scalar subquery inside an aggregate argument
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(R.B * (SELECT COUNT(*) FROM S WHERE S.B = R.B)) AS w FROM R GROUP BY R.A;
