-- dataset: tpch
-- TPC-H Q5 (local supplier volume): revenue per nation of region ASIA in 1994 over a 6-way
-- join (customer and supplier of the same nation). Heavy for every strategy; not in --quick.
SELECT n.N_NAME, SUM(l.L_EXTENDEDPRICE * (1 - l.L_DISCOUNT)) AS REVENUE
FROM CUSTOMER c, ORDERS o, LINEITEM l, SUPPLIER s, NATION n, REGION r
WHERE c.C_CUSTKEY = o.O_CUSTKEY
  AND l.L_ORDERKEY = o.O_ORDERKEY
  AND l.L_SUPPKEY = s.S_SUPPKEY
  AND c.C_NATIONKEY = s.S_NATIONKEY
  AND s.S_NATIONKEY = n.N_NATIONKEY
  AND n.N_REGIONKEY = r.R_REGIONKEY
  AND r.R_NAME = 'ASIA'
  AND o.O_ORDERDATE >= DATE('1994-01-01')
  AND o.O_ORDERDATE < DATE('1995-01-01')
GROUP BY n.N_NAME;
