-- INCLUDE a schema file (path relative to the working directory = the repository root)
INCLUDE 'tests/queries/features/schema_rst.sql';

SELECT R.A, SUM(S.C) AS s FROM R, S WHERE R.B = S.B GROUP BY R.A;
