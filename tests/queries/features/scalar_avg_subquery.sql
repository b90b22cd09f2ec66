-- comparison with an AVG subquery over floats
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, COUNT(*) AS n FROM O WHERE O.PRICE > (SELECT AVG(o2.PRICE) FROM O o2 WHERE o2.ID = O.ID) GROUP BY O.ID;
