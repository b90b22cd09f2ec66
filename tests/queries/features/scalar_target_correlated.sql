-- a correlated scalar subquery as a target of a non-aggregate query (a COUNT: 0, never NULL,
-- over no rows; a SUM there would be NULL, which results cannot hold yet: refused)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, (SELECT COUNT(*) FROM S WHERE S.B = R.B) AS sc FROM R;
