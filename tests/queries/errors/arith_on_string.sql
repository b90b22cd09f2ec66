-- error: operator + needs numbers @ 4:12
CREATE STREAM P(NAME string, QTY int);

SELECT SUM(P.NAME + 1) FROM P;
