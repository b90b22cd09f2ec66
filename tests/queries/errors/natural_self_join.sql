-- error: duplicate relation name R @ 4:37
CREATE STREAM R(A int, B int);

SELECT COUNT(*) FROM R NATURAL JOIN R;
