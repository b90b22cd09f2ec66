-- IN LIST (...) as DBToaster users write it
CREATE STREAM R(A int, B int);

SELECT SUM(R.B) AS s FROM R WHERE R.A IN LIST (0, 2);
