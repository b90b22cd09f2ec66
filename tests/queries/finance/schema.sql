-- Order-book schema of the PVLDB'12 finance workload: the bids and asks books as streams
-- (time, order id, broker, volume, price). No sources: the tests push the events.
CREATE STREAM BIDS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float);
CREATE STREAM ASKS(T float, ID int, BROKER_ID int, VOLUME float, PRICE float);
