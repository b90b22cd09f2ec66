-- INTERSECT (standard set semantics)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.B FROM R INTERSECT SELECT S.B FROM S;
