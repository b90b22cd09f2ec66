-- dataset: tpch
-- TPC-H Q10-like (returned item reporting): revenue lost to returns per customer for orders of
-- 1993 Q4, with the customer's nation (a static TABLE). The spec also groups by phone, address
-- and comment; they are functionally dependent on the customer key and left out here.
SELECT c.C_CUSTKEY, c.C_NAME, c.C_ACCTBAL, n.N_NAME,
       SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT)) AS REVENUE
FROM CUSTOMER c, ORDERS o, LINEITEM l, NATION n
WHERE c.C_CUSTKEY = o.O_CUSTKEY
  AND l.L_ORDERKEY = o.O_ORDERKEY
  AND o.O_ORDERDATE >= DATE('1993-10-01')
  AND o.O_ORDERDATE < DATE('1994-01-01')
  AND l.L_RETURNFLAG = 'R'
  AND c.C_NATIONKEY = n.N_NATIONKEY
GROUP BY c.C_CUSTKEY, c.C_NAME, c.C_ACCTBAL, n.N_NAME;
