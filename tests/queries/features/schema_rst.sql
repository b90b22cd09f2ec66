-- shared schema for INCLUDE tests (not a query file: the suite skips schema_*.sql)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);
CREATE STREAM T(C int, D int);
