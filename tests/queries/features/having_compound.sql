-- HAVING with AND, COUNT(*), and an aggregate not in the select list
CREATE STREAM R(A int, B int);

SELECT R.A, COUNT(*) AS n FROM R GROUP BY R.A HAVING COUNT(*) >= 2 AND SUM(R.B) < 10;
