-- a string group key
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.NAME, SUM(P.QTY) AS q, COUNT(*) AS n FROM P GROUP BY P.NAME;
