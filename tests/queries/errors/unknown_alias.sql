-- error: unknown relation or alias Q @ 4:12
CREATE STREAM R(A int, B int);

SELECT SUM(Q.A) FROM R;
