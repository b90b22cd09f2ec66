-- dataset: tpch
-- TPC-H Q12 (shipping modes and order priority) without CASE: instead of counting high and
-- low priority lines in two columns, count lines per ship mode and order priority (the spec's
-- two counts are sums over these groups). Ship mode MAIL only (no IN lists yet), year 1994.
SELECT l.L_SHIPMODE, o.O_ORDERPRIORITY, COUNT(*) AS LINE_COUNT
FROM ORDERS o, LINEITEM l
WHERE o.O_ORDERKEY = l.L_ORDERKEY
  AND l.L_SHIPMODE = 'MAIL'
  AND l.L_COMMITDATE < l.L_RECEIPTDATE
  AND l.L_SHIPDATE < l.L_COMMITDATE
  AND l.L_RECEIPTDATE >= DATE('1994-01-01')
  AND l.L_RECEIPTDATE < DATE('1995-01-01')
GROUP BY l.L_SHIPMODE, o.O_ORDERPRIORITY;
