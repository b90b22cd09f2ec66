-- CASE without ELSE (no branch matches: 0, or NULL skipped by SUM)
CREATE STREAM R(A int, B int);

SELECT R.A, SUM(CASE WHEN R.B = 1 THEN R.B * 5 WHEN R.B = 3 THEN 7 END) AS s FROM R GROUP BY R.A;
