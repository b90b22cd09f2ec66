-- DISTINCT over an expression target
CREATE STREAM R(A int, B int);

SELECT DISTINCT R.A + R.B AS s FROM R WHERE R.A > 0;
