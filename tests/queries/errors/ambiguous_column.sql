-- error: ambiguous column B @ 5:12
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(B) FROM R, S;
