-- BETWEEN is inclusive at both ends
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(R.A) AS s FROM R WHERE R.A BETWEEN 1 AND 3 GROUP BY R.B;
