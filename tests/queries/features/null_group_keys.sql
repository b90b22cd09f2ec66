-- NULLs: a nullable group key (NULL is one group) and aggregates that skip NULL arguments
CREATE STREAM R(A int NULL, B int NULL, C float);

SELECT R.A, SUM(R.B) AS sb, COUNT(R.B) AS cb, COUNT(*) AS n, AVG(R.B) AS ab, MIN(R.B) AS mn, MAX(R.C) AS mx
FROM R GROUP BY R.A;
SELECT COUNT(DISTINCT R.B) AS d, SUM(R.C) AS sc FROM R;
