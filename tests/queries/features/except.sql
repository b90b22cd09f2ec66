-- EXCEPT (standard set semantics)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A FROM R EXCEPT SELECT S.C FROM S;
