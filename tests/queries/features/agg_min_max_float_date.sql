-- MIN/MAX over floats and dates
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, MIN(O.PRICE) AS lo, MAX(O.PRICE) AS hi, MAX(O.ODATE) AS latest FROM O GROUP BY O.ID;
