-- dataset: tpch
-- TPC-H Q6 (forecasting revenue change): year 1994, discount 0.06 +- 0.01, quantity < 24.
-- BETWEEN is written as >= and <=.
SELECT SUM(l.L_EXTENDEDPRICE * l.L_DISCOUNT) AS REVENUE
FROM LINEITEM l
WHERE l.L_SHIPDATE >= DATE('1994-01-01')
  AND l.L_SHIPDATE < DATE('1995-01-01')
  AND l.L_DISCOUNT >= 0.05
  AND l.L_DISCOUNT <= 0.07
  AND l.L_QUANTITY < 24;
