-- AXF (axis finder): per broker, the volume difference over bid/ask pairs whose prices differ by more than 1000
INCLUDE 'tests/queries/finance/schema.sql';

SELECT b.BROKER_ID, SUM(a.VOLUME - b.VOLUME) AS AXF
FROM BIDS b, ASKS a
WHERE b.BROKER_ID = a.BROKER_ID
  AND (a.PRICE - b.PRICE > 1000 OR b.PRICE - a.PRICE > 1000)
GROUP BY b.BROKER_ID;
