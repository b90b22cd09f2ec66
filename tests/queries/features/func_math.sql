-- undocumented math functions: pow, radians, degrees
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, SUM(POW(O.PRICE, 2)) AS sq, SUM(RADIANS(O.PRICE)) AS rad, SUM(DEGREES(O.PRICE)) AS deg FROM O GROUP BY O.ID;
