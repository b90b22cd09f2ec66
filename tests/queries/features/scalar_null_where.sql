-- an empty scalar subquery is NULL (issue 12): the comparison is unknown, so the row is
-- dropped, also under NOT and OR (COUNT over no rows is 0, not NULL)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(*) AS n FROM R
WHERE R.A > (SELECT SUM(S.C) FROM S WHERE S.B = R.B)
   OR NOT (R.B <= (SELECT MAX(S.C) FROM S WHERE S.C = R.A) + 1)
   OR R.A * 2 < (SELECT COUNT(*) FROM S WHERE S.C = R.B)
GROUP BY R.A;
