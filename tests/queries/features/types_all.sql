-- every column type, with aliased declared types
CREATE STREAM E(ID integer, X double, Y decimal, D date, NM varchar(10), CD char(2));

SELECT E.NM, E.CD, SUM(E.X * E.Y) AS xy, COUNT(*) AS n FROM E WHERE E.D > DATE('1994-12-31') GROUP BY E.NM, E.CD;
