-- MIN/MAX (value-multiplicity maps, exact under deletions) and AVG (SUM/COUNT), reconstituted on read.
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C float);
SELECT R.B, AVG(S.C) AS av, MIN(R.A) AS mn, MAX(R.A * 2) AS mx FROM R, S WHERE R.B = S.B GROUP BY R.B;
