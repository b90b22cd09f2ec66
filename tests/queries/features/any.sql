-- = ANY is treated as SOME
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) AS n FROM R WHERE R.A = ANY (SELECT S.C FROM S);
