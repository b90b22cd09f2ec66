-- TPC-H Q13 as the specification writes it: a LEFT OUTER JOIN inside a grouped FROM subquery
-- (customers without matching orders count 0 orders); ORDER BY dropped.
INCLUDE 'tests/queries/tpch/schema.sql';

SELECT C_COUNT, COUNT(*) AS CUSTDIST
FROM (SELECT C_CUSTKEY, COUNT(O_ORDERKEY) AS C_COUNT
      FROM CUSTOMER LEFT OUTER JOIN ORDERS
           ON C_CUSTKEY = O_CUSTKEY AND O_COMMENT NOT LIKE '%special%requests%'
      GROUP BY C_CUSTKEY) AS C_ORDERS
GROUP BY C_COUNT;
