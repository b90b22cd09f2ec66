-- dataset: finance
-- MST: per broker, bid against ask notional over the top quarters of both books (two range-correlated nested aggregates)
SELECT b.BROKER_ID, SUM(a.PRICE * a.VOLUME - b.PRICE * b.VOLUME) AS MST
FROM BIDS b, ASKS a
WHERE 0.25 * (SELECT SUM(a1.VOLUME) FROM ASKS a1) >
            (SELECT SUM(a2.VOLUME) FROM ASKS a2 WHERE a2.PRICE > a.PRICE)
  AND 0.25 * (SELECT SUM(b1.VOLUME) FROM BIDS b1) >
            (SELECT SUM(b2.VOLUME) FROM BIDS b2 WHERE b2.PRICE > b.PRICE)
GROUP BY b.BROKER_ID;
