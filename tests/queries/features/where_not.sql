-- NOT over a comparison and over a parenthesised condition
CREATE STREAM R(A int, B int);

SELECT SUM(R.A) AS s FROM R WHERE NOT R.A <= 1 AND NOT (R.B = 2 OR R.B = 3);
