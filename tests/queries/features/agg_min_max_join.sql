-- MAX over a join, MIN of an expression, no GROUP BY
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT MAX(S.C) AS hi, MIN(R.A + S.C) AS lo FROM R, S WHERE R.B = S.B;
