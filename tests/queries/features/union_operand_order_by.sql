-- ORDER BY inside an operand of a set operation (issue 12): accepted, it does not change the rows
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A FROM R WHERE R.B > 1 ORDER BY R.A
UNION
SELECT S.C FROM S ORDER BY S.C DESC;
