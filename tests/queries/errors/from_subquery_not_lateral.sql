-- error: unknown relation or alias R @ 5:56
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) FROM R, (SELECT S.C FROM S WHERE S.B = R.B) q;
