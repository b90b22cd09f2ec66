-- dataset: finance
-- Bid-side notional per broker: the volume-weighted price sum of each broker's resting bids
-- (the building block of VWAP-style queries).
SELECT b.BROKER_ID, SUM(b.PRICE * b.VOLUME) AS NOTIONAL, SUM(b.VOLUME) AS VOLUME
FROM BIDS b
GROUP BY b.BROKER_ID;
