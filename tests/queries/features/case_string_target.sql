-- CASE producing strings as a non-aggregate target
CREATE STREAM R(A int, B int);

SELECT R.A, CASE WHEN R.B > 2 THEN 'big' ELSE 'small' END AS size FROM R;
