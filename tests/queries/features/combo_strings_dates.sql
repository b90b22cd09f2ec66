-- strings, LIKE, dates and floats across a join
CREATE STREAM P(NAME string, QTY int, K int);
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT P.NAME, SUM(O.PRICE * P.QTY) AS v FROM P, O
WHERE P.K = O.ID AND P.NAME LIKE '%a%' AND EXTRACT(YEAR FROM O.ODATE) = 1995 GROUP BY P.NAME;
