-- error: cannot compare string with int @ 5:14
CREATE STREAM P(NAME string, QTY int);

SELECT COUNT(*) FROM P
WHERE P.NAME > 1;
