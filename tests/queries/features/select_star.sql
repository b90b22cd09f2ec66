-- SELECT * over one relation: each distinct row with its multiplicity
CREATE STREAM R(A int, B int);

SELECT * FROM R;
