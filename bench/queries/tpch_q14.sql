-- dataset: tpch
-- TPC-H Q14 (promotion effect) without CASE and LIKE: the total revenue of September 1995
-- shipments joined with PART (the denominator of the spec's promo percentage).
SELECT SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT)) AS REVENUE
FROM LINEITEM l, PART p
WHERE l.L_PARTKEY = p.P_PARTKEY
  AND l.L_SHIPDATE >= DATE('1995-09-01')
  AND l.L_SHIPDATE < DATE('1995-10-01');
