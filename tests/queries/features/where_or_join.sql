-- OR between join conditions (a disjunctive join)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT COUNT(*) AS n FROM R, S WHERE R.B = S.B OR R.A = S.C;
