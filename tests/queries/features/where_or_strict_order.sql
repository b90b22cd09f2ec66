-- x > y OR x < y (never both) and a difference bounded on both sides of 0.5
CREATE STREAM R(A int, B float);
CREATE STREAM S(C int, D float);

SELECT COUNT(*) AS n, SUM(R.B) AS b
FROM R, S
WHERE (R.A > S.C OR R.A < S.C) AND (R.B - S.D >= 0.5 OR S.D - R.B > -0.5);
