-- float values, date comparisons with DATE('1995-01-01'), a date group key; two results
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, SUM(O.PRICE) AS revenue, COUNT(*) AS n
FROM O WHERE O.ODATE < DATE('1995-01-01') GROUP BY O.ID;

SELECT O.ODATE, SUM(O.PRICE * 2.5) AS weighted
FROM O WHERE O.ODATE >= DATE('1995-01-01') GROUP BY O.ODATE;
