-- arithmetic over aggregates and group columns
CREATE STREAM R(A int, B int);

SELECT R.A, R.A * SUM(R.B) AS ab, SUM(R.B) * 2 + COUNT(*) AS x FROM R GROUP BY R.A;
