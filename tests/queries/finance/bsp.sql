-- BSP (brokers' spread): per broker, the difference between later and earlier bids' value
INCLUDE 'tests/queries/finance/schema.sql';

SELECT x.BROKER_ID, SUM(x.VOLUME * x.PRICE - y.VOLUME * y.PRICE) AS BSP
FROM BIDS x, BIDS y
WHERE x.BROKER_ID = y.BROKER_ID AND x.T > y.T
GROUP BY x.BROKER_ID;
