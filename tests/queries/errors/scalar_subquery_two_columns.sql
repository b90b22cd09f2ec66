-- error: one column @ 5:37
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) FROM R WHERE R.A < (SELECT SUM(S.B), SUM(S.C) FROM S);
