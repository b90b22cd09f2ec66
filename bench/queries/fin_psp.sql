-- dataset: finance
-- PSP (price spread): spread over bid/ask pairs whose volumes exceed a fraction of their book's total
-- (a range over the row's own attribute against a global scalar)
SELECT SUM(a.PRICE - b.PRICE) AS PSP
FROM BIDS b, ASKS a
WHERE b.VOLUME > 0.0001 * (SELECT SUM(b1.VOLUME) FROM BIDS b1)
  AND a.VOLUME > 0.0001 * (SELECT SUM(a1.VOLUME) FROM ASKS a1);
