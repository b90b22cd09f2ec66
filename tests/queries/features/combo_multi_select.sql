-- several SELECTs of different shapes in one file share the streams
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, S.C FROM R, S WHERE R.B = S.B;
SELECT COUNT(*) FROM R;
SELECT S.B, AVG(S.C) AS av FROM S GROUP BY S.B;
