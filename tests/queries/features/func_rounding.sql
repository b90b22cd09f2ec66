-- floor, ceil, abs keep their argument's type; pow, radians, degrees; a math function in WHERE and GROUP BY
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT floor(O.PRICE / 10) AS bucket, SUM(ceil(O.PRICE) + abs(O.ID) + pow(O.ID, 0.5)) AS s, COUNT(*) AS n
FROM O WHERE degrees(radians(O.PRICE)) > 1 GROUP BY floor(O.PRICE / 10);
