-- a scalar subquery nested in another, correlated at both levels
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);

SELECT COUNT(*) AS n FROM R
WHERE R.A <= (SELECT SUM(S.C) FROM S
              WHERE S.B = R.B AND S.C >= (SELECT COUNT(*) FROM T WHERE T.C = S.C));
