-- ORDER BY is applied when a result is read
CREATE STREAM R(A int, B int);

SELECT R.B, COUNT(*) AS n FROM R GROUP BY R.B ORDER BY R.B DESC;
