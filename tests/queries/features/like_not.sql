-- NOT LIKE; the pattern must match the whole string
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.NAME, COUNT(*) AS n FROM P WHERE P.NAME NOT LIKE '%a' GROUP BY P.NAME;
