-- error: unknown relation S @ 4:22
CREATE STREAM R(A int, B int);

SELECT COUNT(*) FROM S;
CREATE STREAM S(B int, C int);
