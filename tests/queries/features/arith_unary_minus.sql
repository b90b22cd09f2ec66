-- unary minus over columns, expressions and aggregates
CREATE STREAM R(A int, B int);

SELECT R.B, SUM(-R.A) AS neg, -SUM(R.A - -R.B) AS neg2 FROM R GROUP BY R.B;
