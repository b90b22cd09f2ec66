-- dataset: tpch
-- TPC-H Q1 (pricing summary report) without AVG: the sums and the count per return flag and
-- line status (AVG = SUM / COUNT is left to the reader until aggregate arithmetic lands).
-- The spec's DELTA is 90 days: shipdate <= 1998-12-01 - 90 days = 1998-09-02.
SELECT l.L_RETURNFLAG, l.L_LINESTATUS,
       SUM(l.L_QUANTITY) AS SUM_QTY,
       SUM(l.L_EXTENDEDPRICE) AS SUM_BASE_PRICE,
       SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT)) AS SUM_DISC_PRICE,
       SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT) * (1 + l.L_TAX)) AS SUM_CHARGE,
       SUM(l.L_DISCOUNT) AS SUM_DISC,
       COUNT(*) AS COUNT_ORDER
FROM LINEITEM l
WHERE l.L_SHIPDATE <= DATE('1998-09-02')
GROUP BY l.L_RETURNFLAG, l.L_LINESTATUS;
