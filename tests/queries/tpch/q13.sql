-- TPC-H Q13, customer distribution. The specification's LEFT OUTER JOIN ... GROUP BY C_CUSTKEY
-- is written as a correlated count (0 for customers without matching orders), which toaster
-- maintains without outer joins; ORDER BY dropped.
INCLUDE 'tests/queries/tpch/schema.sql';

SELECT C_COUNT, COUNT(*) AS CUSTDIST
FROM (SELECT C_CUSTKEY,
             (SELECT COUNT(*) FROM ORDERS
              WHERE O_CUSTKEY = C_CUSTKEY AND O_COMMENT NOT LIKE '%special%requests%') AS C_COUNT
      FROM CUSTOMER) AS C_ORDERS
GROUP BY C_COUNT;
