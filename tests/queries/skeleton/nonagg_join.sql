-- A non-aggregate query: each distinct result row is a key, its multiplicity the COUNT value.
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, S.C FROM R, S WHERE R.B = S.B AND S.C > 1;
