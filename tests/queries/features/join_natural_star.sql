-- * over a NATURAL JOIN keeps both copies of the shared column
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT * FROM R NATURAL JOIN S;
