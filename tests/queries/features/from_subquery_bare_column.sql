-- a subquery column named by its bare column name
CREATE STREAM R(A int, B int);

SELECT SUM(q.A) AS s, COUNT(*) AS n FROM (SELECT R.A FROM R WHERE R.B <> 0) AS q;
