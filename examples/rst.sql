-- The running example of the higher-order IVM papers: a 3-way join of three streams.
-- Run from the repository root (paths resolve against the working directory, as in DBToaster):
--   python -m toaster.pipeline examples/rst.sql --run
-- S carries deletions: each line is seq|op|B|C with op 1 = insert, 0 = delete.

CREATE STREAM R(A int, B int)
  FROM FILE 'examples/data/r.csv' LINE DELIMITED CSV (delimiter := '|');

CREATE STREAM S(B int, C int)
  FROM FILE 'examples/data/s.csv' LINE DELIMITED CSV (delimiter := '|', deletions := 'true');

CREATE STREAM T(C int, D int)
  FROM FILE 'examples/data/t.csv' LINE DELIMITED CSV (delimiter := '|');

-- a scalar result (its name is generated: __SQL_SUM_AGGREGATE_1)
SELECT SUM(R.A * T.D) FROM R, S, T WHERE R.B = S.B AND S.C = T.C;

-- a grouped result: one row per S.C with two aggregates
SELECT S.C, COUNT(*) AS matches, SUM(R.A * T.D) AS total
FROM R, S, T WHERE R.B = S.B AND S.C = T.C
GROUP BY S.C;
