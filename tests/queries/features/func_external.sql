-- a declared external function
CREATE FUNCTION cos(x double) RETURNS double AS EXTERNAL 'cos';
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, SUM(cos(O.PRICE)) AS c FROM O GROUP BY O.ID;
