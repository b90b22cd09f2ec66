-- NOT EXISTS with a correlated subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) AS n FROM R WHERE NOT EXISTS (SELECT S.C FROM S WHERE S.B = R.B AND S.C > R.A);
