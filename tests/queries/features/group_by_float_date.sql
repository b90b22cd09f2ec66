-- float and date group keys
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.PRICE, O.ODATE, COUNT(*) AS n FROM O GROUP BY O.PRICE, O.ODATE;
