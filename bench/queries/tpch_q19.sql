-- dataset: tpch
-- TPC-H Q19-like (discounted revenue): the first of the spec's three OR-ed conjunctions
-- (Brand#12, small case, quantity 1..11, size 1..5), one container and one ship mode
-- (no IN lists yet).
SELECT SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT)) AS REVENUE
FROM LINEITEM l, PART p
WHERE p.P_PARTKEY = l.L_PARTKEY
  AND p.P_BRAND = 'Brand#12'
  AND p.P_CONTAINER = 'SM CASE'
  AND l.L_QUANTITY >= 1 AND l.L_QUANTITY <= 11
  AND p.P_SIZE >= 1 AND p.P_SIZE <= 5
  AND l.L_SHIPMODE = 'AIR'
  AND l.L_SHIPINSTRUCT = 'DELIVER IN PERSON';
