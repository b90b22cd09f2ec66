-- equality with a correlated count
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) AS n FROM R WHERE R.A = (SELECT COUNT(*) FROM S WHERE S.B = R.B);
