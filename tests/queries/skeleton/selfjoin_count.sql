-- self-join: both sides of the join see the same delta
CREATE STREAM R(A int, B int);

SELECT COUNT(*) FROM R r1, R r2 WHERE r1.B = r2.A;
