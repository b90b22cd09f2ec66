-- NULLs: IS [NOT] NULL and three-valued logic in WHERE (a comparison with NULL is unknown; NOT keeps it out)
CREATE STREAM R(A int, B int NULL, S string NULL);

SELECT R.A, COUNT(*) AS n FROM R WHERE R.B IS NULL GROUP BY R.A;
SELECT R.A, SUM(R.B) AS s FROM R WHERE R.S IS NOT NULL AND NOT (R.B > 2) GROUP BY R.A;
SELECT COUNT(*) AS n FROM R WHERE R.B = 1 OR R.S = 'a' OR NOT (R.A < R.B);
SELECT COUNT(*) AS n FROM R WHERE NOT (R.B BETWEEN 1 AND 3 AND R.S LIKE 'a%');
