-- error: SUM needs a number @ 4:12
CREATE STREAM P(NAME string, QTY int);

SELECT SUM(P.NAME) FROM P;
