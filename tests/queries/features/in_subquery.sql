-- IN (subquery): each outer row counts once however many rows match
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(*) AS n FROM R WHERE R.B IN (SELECT S.B FROM S) GROUP BY R.A;
