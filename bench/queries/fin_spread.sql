-- dataset: finance
-- Same-broker book exposure: for each broker, the sum over its (bid, ask) pairs of the price
-- difference weighted by the matched volume (a bids x asks equi-join on the broker, BSP-like).
SELECT b.BROKER_ID, SUM((a.PRICE - b.PRICE) * b.VOLUME * a.VOLUME) AS EXPOSURE, COUNT(*) AS PAIRS
FROM BIDS b, ASKS a
WHERE b.BROKER_ID = a.BROKER_ID
GROUP BY b.BROKER_ID;
