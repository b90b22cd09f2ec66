-- _ matches exactly one character; patterns mixing both
CREATE STREAM P(NAME string, QTY int, K int);

SELECT COUNT(*) AS one_char FROM P WHERE P.NAME LIKE '_';
SELECT COUNT(*) AS two_chars FROM P WHERE P.NAME LIKE '_%' AND P.NAME NOT LIKE '_';
SELECT COUNT(*) AS sp FROM P WHERE P.NAME LIKE '% %';
