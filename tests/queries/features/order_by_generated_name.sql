-- ORDER BY naming the generated name of an unaliased target (issue 12: DBToaster's parser names them)
CREATE STREAM R(A int, B int);

SELECT R.A, SUM(R.B) FROM R GROUP BY R.A ORDER BY __SQL_SUM_AGGREGATE_1 DESC, R.A LIMIT 2;

SELECT R.A * 2, R.B FROM R ORDER BY __sql_expression_2, R.B DESC LIMIT 3;
