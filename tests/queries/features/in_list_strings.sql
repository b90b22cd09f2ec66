-- IN over strings (exact, case-sensitive; ' a' is not 'a')
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.NAME, SUM(P.QTY) AS q FROM P WHERE P.NAME IN ('a', 'AB') GROUP BY P.NAME;
