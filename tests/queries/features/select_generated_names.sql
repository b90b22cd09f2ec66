-- aggregates without aliases get generated result names
CREATE STREAM R(A int, B int);

SELECT SUM(R.A), COUNT(*), AVG(R.B) FROM R;
