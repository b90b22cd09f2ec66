-- aggregate over an aggregate subquery with a filter on its value
CREATE STREAM R(A int, B int);

SELECT SUM(q.total) AS big FROM (SELECT R.B, SUM(R.A) AS total FROM R GROUP BY R.B) AS q WHERE q.total > 3;
