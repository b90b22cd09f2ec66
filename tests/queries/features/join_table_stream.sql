-- a static TABLE joined to a stream
CREATE TABLE N(K int, W int);
CREATE STREAM R(A int, B int);

SELECT N.W, SUM(R.A) AS s, COUNT(*) AS n FROM R, N WHERE R.B = N.K GROUP BY N.W;
