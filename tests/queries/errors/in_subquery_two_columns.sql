-- error: one column @ 5:38
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) FROM R WHERE R.B IN (SELECT S.B, S.C FROM S);
