-- substring with a 0-based start
CREATE STREAM P(NAME string, QTY int, K int);

SELECT SUBSTRING(P.NAME, 0, 1) AS first, SUM(P.QTY) AS q FROM P GROUP BY SUBSTRING(P.NAME, 0, 1);
