-- dataset: finance
-- AXF (axis finder): per broker, the volume difference over bid/ask pairs whose prices differ by more than 1
-- (an inequality join grouped by broker)
SELECT b.BROKER_ID, SUM(a.VOLUME - b.VOLUME) AS AXF
FROM BIDS b, ASKS a
WHERE b.BROKER_ID = a.BROKER_ID
  AND (a.PRICE - b.PRICE > 1 OR b.PRICE - a.PRICE > 1)
GROUP BY b.BROKER_ID;
