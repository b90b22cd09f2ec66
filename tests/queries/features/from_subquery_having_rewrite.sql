-- DBToaster's HAVING rewrite: filter the group sums in an outer query
CREATE STREAM R(A int, B int);

SELECT g.A, SUM(g.t) AS t FROM (SELECT R.A, SUM(R.B) AS t FROM R GROUP BY R.A) g WHERE g.t > 4 GROUP BY g.A;
