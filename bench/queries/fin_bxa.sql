-- dataset: finance
-- Crossing pairs per broker pair: how many (bid, ask) pairs of two brokers would trade, and the
-- volume imbalance over those pairs (a bids x asks join with an inequality, AXF-like).
SELECT b.BROKER_ID AS BID_BROKER, a.BROKER_ID AS ASK_BROKER, COUNT(*) AS PAIRS,
       SUM(a.VOLUME - b.VOLUME) AS IMBALANCE
FROM BIDS b, ASKS a
WHERE b.PRICE >= a.PRICE - 0.05
GROUP BY b.BROKER_ID, a.BROKER_ID;
