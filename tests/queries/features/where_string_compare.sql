-- comparisons between strings (equality and order)
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.K, SUM(P.QTY) AS q FROM P WHERE P.NAME <> 'a' AND P.NAME < 'c' GROUP BY P.K;
