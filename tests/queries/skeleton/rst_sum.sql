-- 3-way join, scalar aggregate (the running example of the seeds)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C;
