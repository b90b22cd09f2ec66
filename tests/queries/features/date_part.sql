-- DATE_PART('month', d) as a non-aggregate target and in WHERE
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT DATE_PART('month', O.ODATE) AS m, O.ID FROM O WHERE DATE_PART('YEAR', O.ODATE) >= 1995;
