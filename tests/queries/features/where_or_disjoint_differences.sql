-- OR of conditions bounding one difference to disjoint ranges (an order book's "prices apart by
-- more than 1"): at most one holds, so the OR is their sum, with no inclusion-exclusion term
CREATE STREAM R(A int, B float);
CREATE STREAM S(C int, D float);

SELECT R.A, SUM(S.D - R.B) AS gap
FROM R, S
WHERE R.A = S.C AND (S.D - R.B > 1 OR R.B - S.D > 1)
GROUP BY R.A;
