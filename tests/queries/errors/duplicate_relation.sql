-- error: duplicate relation name R @ 4:25
CREATE STREAM R(A int, B int);

SELECT SUM(R.A) FROM R, R;
