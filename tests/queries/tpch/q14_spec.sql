-- TPC-H Q14 in its specification form (DATE + INTERVAL '1' MONTH, 100.00 * a ratio); the
-- divisor is guarded with LISTMAX(1, ...) so that an empty month gives 0 instead of 0/0.
INCLUDE 'tests/queries/tpch/schema.sql';

SELECT 100.00 * SUM(CASE WHEN P_TYPE LIKE 'PROMO%' THEN L_EXTENDEDPRICE * (1 - L_DISCOUNT) ELSE 0 END)
       / LISTMAX(1, SUM(L_EXTENDEDPRICE * (1 - L_DISCOUNT))) AS PROMO_REVENUE
FROM LINEITEM, PART
WHERE L_PARTKEY = P_PARTKEY
  AND L_SHIPDATE >= DATE('1995-09-01')
  AND L_SHIPDATE < DATE '1995-09-01' + INTERVAL '1' MONTH;
