-- a subquery in FROM whose own FROM is a subquery
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT SUM(w.s2) AS total
FROM (SELECT v.B, SUM(v.prod) AS s2
      FROM (SELECT R.B, R.A * S.C AS prod FROM R, S WHERE R.B = S.B) v
      GROUP BY v.B) w;
