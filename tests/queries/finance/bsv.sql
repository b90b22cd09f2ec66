-- BSV (broker sales volume): per broker, half the sum of value products over pairs of its bids
INCLUDE 'tests/queries/finance/schema.sql';

SELECT x.BROKER_ID, SUM(x.VOLUME * x.PRICE * y.VOLUME * y.PRICE * 0.5) AS BSV
FROM BIDS x, BIDS y
WHERE x.BROKER_ID = y.BROKER_ID
GROUP BY x.BROKER_ID;
