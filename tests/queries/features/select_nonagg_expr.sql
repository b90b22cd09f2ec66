-- non-aggregate targets that are expressions, with aliases
CREATE STREAM R(A int, B int);

SELECT R.A + R.B AS apb, R.A * 2 AS twice FROM R WHERE R.B < 4;
