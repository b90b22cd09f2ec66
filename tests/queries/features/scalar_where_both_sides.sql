-- scalar subqueries on both sides of a comparison, with arithmetic
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(R.A) AS s FROM R
WHERE 0.5 * (SELECT SUM(S.C) FROM S) > (SELECT SUM(S.C) FROM S WHERE S.B > R.B);
