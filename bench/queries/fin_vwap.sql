-- dataset: finance
-- VWAP numerator over the bids in the top quarter of the book volume (a nested aggregate correlated by a price range)
SELECT SUM(b1.PRICE * b1.VOLUME) AS VWAP
FROM BIDS b1
WHERE 0.25 * (SELECT SUM(b3.VOLUME) FROM BIDS b3) >
            (SELECT SUM(b2.VOLUME) FROM BIDS b2 WHERE b2.PRICE > b1.PRICE);
