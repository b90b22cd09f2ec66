/* block comment
   over several lines */
CREATE STREAM R(A int, B int); -- trailing comment
-- a comment line inside the query below
SELECT /* inline */ R.B, SUM(R.A) AS s -- after a target
FROM R
GROUP BY R.B
