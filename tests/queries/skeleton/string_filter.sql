-- string equality filter, and a string group key (values include ' a' with a leading space)
CREATE STREAM P(NAME string, QTY int, K int);

SELECT P.K, SUM(P.QTY) AS q FROM P WHERE P.NAME = 'a' GROUP BY P.K;

SELECT P.NAME, COUNT(*) AS n FROM P GROUP BY P.NAME;
