-- error: cannot compare date with int @ 4:30
CREATE STREAM O(ID int, D date);

SELECT COUNT(*) FROM O WHERE O.D = 3;
