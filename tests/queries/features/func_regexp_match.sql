-- regexp_match(pattern, string) returns 1 or 0
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.K, SUM(REGEXP_MATCH('^[aA]', P.NAME)) AS starts_a FROM P GROUP BY P.K;
SELECT COUNT(*) AS b_or_c FROM P WHERE REGEXP_MATCH('^(b|c)$', P.NAME) = 1;
