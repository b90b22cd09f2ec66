-- month and day intervals, added and subtracted
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, SUM(O.PRICE) AS p FROM O
WHERE O.ODATE > DATE('1995-03-01') - INTERVAL '3' MONTH
  AND O.ODATE <= DATE('1994-12-25') + INTERVAL '8' DAY
GROUP BY O.ID;
