-- cast_int truncates floats, cast_float widens, cast_string, cast_date
CREATE STREAM O(ID int, PRICE float, ODATE date);

SELECT CAST_INT(O.PRICE) AS ip, SUM(CAST_FLOAT(O.ID) / 2) AS half FROM O GROUP BY CAST_INT(O.PRICE);
SELECT CAST_STRING(O.ID) AS sid, COUNT(*) AS n FROM O WHERE O.ODATE < CAST_DATE('1995-01-01') GROUP BY CAST_STRING(O.ID);
