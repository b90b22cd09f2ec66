-- AVG over floats, grouped
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, AVG(O.PRICE) AS avg_price, AVG(O.ID * 1.0) AS avg_id FROM O GROUP BY O.ID;
