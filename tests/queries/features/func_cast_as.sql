-- CAST(x AS type)
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(CAST(R.A AS double) / 4) AS q, SUM(CAST(R.A AS float) * 1.5) AS f FROM R GROUP BY R.B;
