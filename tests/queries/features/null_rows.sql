-- NULLs: non-aggregate results with NULLs (each distinct row with its multiplicity), DISTINCT, expressions
CREATE STREAM R(A int, B int NULL, S string NULL);

SELECT R.S, R.B FROM R;
SELECT DISTINCT R.B + R.A AS x FROM R;
SELECT R.B * 2 AS y, COUNT(*) AS n FROM R GROUP BY R.B * 2;
