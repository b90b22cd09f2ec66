-- float arithmetic and int->float promotion
CREATE STREAM O(ID int, PRICE float, ODATE date);
CREATE STREAM R(A int, B int);

SELECT O.ID, SUM(O.PRICE * 1.5 - 2) AS adj FROM O GROUP BY O.ID;
SELECT SUM(R.A * 0.5 + R.B) AS mixed FROM R;
