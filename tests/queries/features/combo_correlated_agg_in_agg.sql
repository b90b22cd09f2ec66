-- an aggregate whose argument holds a correlated subquery with a join
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT R.A, SUM(R.B + (SELECT SUM(T.D) FROM S, T WHERE S.C = T.C AND S.B = R.B)) AS total FROM R GROUP BY R.A;
