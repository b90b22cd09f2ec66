-- select list: expressions over columns with aliases, two aggregates of one group
CREATE STREAM R(A int, B int);

SELECT R.A, SUM(R.A * R.B + 1) AS total, COUNT(*) AS cnt FROM R GROUP BY R.A;
