-- a correlated scalar subquery as a target of a non-aggregate query
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, (SELECT SUM(S.C) FROM S WHERE S.B = R.B) AS sc FROM R;
