-- a SELECT without FROM is a constant view; a second SELECT in the same file reads R
CREATE STREAM R(A int, B int);

SELECT 1 AS x WHERE 2 > 1;

SELECT COUNT(*) AS n FROM R;
