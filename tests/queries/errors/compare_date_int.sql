-- error: cannot compare date with int @ 4:34
CREATE STREAM O(ID int, D date);

SELECT COUNT(*) FROM O WHERE O.D = 3;
