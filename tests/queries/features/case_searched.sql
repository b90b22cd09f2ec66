-- searched CASE inside an aggregate
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(CASE WHEN R.A > 2 THEN R.A ELSE 0 - R.A END) AS signed FROM R GROUP BY R.B;
