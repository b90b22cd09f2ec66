-- R.* expands to all columns of R, in order, beside another target
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

SELECT S.*, R.A FROM R, S WHERE R.B = S.B;
