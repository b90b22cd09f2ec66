-- results that are not empty on the empty database: a constant, NOT EXISTS over no rows, a
-- scalar subquery without FROM (initial map values, ON SYSTEM READY)
CREATE STREAM R(A int, B int);
SELECT 1 + 2 AS x;
SELECT COUNT(*) AS n WHERE NOT EXISTS (SELECT * FROM R WHERE R.A > 2);
SELECT (SELECT COUNT(*) FROM R) + 1 AS total;
