-- every comparison operator, one SELECT each (several SELECTs in one file)
CREATE STREAM R(A int, B int);

SELECT COUNT(*) AS eq FROM R WHERE R.A = R.B;
SELECT COUNT(*) AS ne1 FROM R WHERE R.A <> R.B;
SELECT COUNT(*) AS ne2 FROM R WHERE R.A != R.B;
SELECT COUNT(*) AS lt FROM R WHERE R.A < R.B;
SELECT COUNT(*) AS le FROM R WHERE R.A <= R.B;
SELECT COUNT(*) AS gt FROM R WHERE R.A > R.B;
SELECT COUNT(*) AS ge FROM R WHERE R.A >= R.B;
