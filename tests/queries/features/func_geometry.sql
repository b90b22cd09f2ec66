-- vec_length, vector_angle and dihedral_angle over points built from columns (some coincide)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT R.A, SUM(vec_length(R.A, R.B, S.C)) AS len, SUM(vector_angle(R.A, R.B, 1, S.C, 1, R.B)) AS ang,
       SUM(dihedral_angle(R.A, R.B, 0, 0, 0, 0, S.C, 1, 0, 1, S.B, 1)) AS dih
FROM R, S WHERE R.B = S.B GROUP BY R.A;
