-- ranges of one difference that meet at a point (A - C = 1 satisfies both): both may hold,
-- so the OR keeps its inclusion-exclusion term
CREATE STREAM R(A int, B float);
CREATE STREAM S(C int, D float);

SELECT R.A, COUNT(*) AS n
FROM R, S
WHERE R.A - S.C >= 1 OR S.C - R.A >= -1
GROUP BY R.A;
