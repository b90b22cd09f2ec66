-- nested AND/OR/NOT
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(S.C) AS s FROM R, S
WHERE R.B = S.B AND (R.A < 2 OR NOT S.C > 3) AND (S.C < 2 OR S.C = 4 OR R.A >= 4)
GROUP BY R.A;
