-- trigonometry and logarithms of DBToaster's math library, without CREATE FUNCTION: cos, sin, tan, atan, atan2, sqrt, exp, ln, log
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT O.ID, SUM(cos(O.PRICE) + sin(O.PRICE) * tan(O.PRICE / 100)) AS trig, SUM(atan(O.PRICE) + atan2(O.PRICE, O.ID)) AS ang,
       SUM(sqrt(abs(O.PRICE)) + ln(abs(O.PRICE) + 1) + log(abs(O.PRICE) + 1)) AS logs, SUM(exp(O.PRICE / 1000)) AS e
FROM O GROUP BY O.ID;
