-- error: unknown function FOO @ 4:12
CREATE STREAM R(A int, B int);

SELECT SUM(FOO(R.A)) FROM R;
