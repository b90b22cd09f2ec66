-- literal arithmetic is exact, as DECIMAL: (0.7 + 0.1) * 5 is 4 and (0.1 + 0.2) * 100 is 30
-- (as doubles they are 3.9999999999999996 and 30.000000000000004); rounded once where a
-- constant meets a float column
CREATE STREAM R(A int, B int);
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT R.B, COUNT(*) AS n FROM R
WHERE R.A <= (0.7 + 0.1) * 5 AND R.A * 10 <> (0.1 + 0.2) * 10 * 10
GROUP BY R.B;

SELECT O.ID, SUM(O.PRICE * (1 - 0.9)) AS p FROM O
WHERE O.PRICE BETWEEN 1.2 + 0.05 AND 2.2 + 1.55 OR O.PRICE = 20 / 2.0
GROUP BY O.ID;
