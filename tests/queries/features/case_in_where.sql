-- CASE in a WHERE comparison and several conditions per WHEN
CREATE STREAM R(A int, B int);

SELECT COUNT(*) AS n FROM R
WHERE CASE WHEN R.A > 2 AND R.B < 4 THEN R.B WHEN R.A = 0 OR R.B = 0 THEN 10 ELSE R.A END > 2;
