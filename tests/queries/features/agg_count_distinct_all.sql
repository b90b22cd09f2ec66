-- COUNT(DISTINCT) with no argument (DBToaster's parser accepts it): the number of distinct input rows
-- of the group, i.e. COUNT(DISTINCT <every column of the FROM clause>)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, COUNT(DISTINCT), COUNT(*) AS n FROM R, S WHERE R.B = S.B GROUP BY R.A;

SELECT COUNT(DISTINCT) AS nd FROM R;

SELECT R.A, R.B FROM R WHERE R.A < (SELECT COUNT(DISTINCT) FROM S WHERE S.B = R.B);
