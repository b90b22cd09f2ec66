-- ORDER BY ... LIMIT inside operands of set operations (issue 12): each operand's top-n, as in DuckDB,
-- applied when the result is read (a top-n is not maintained by summing deltas)
CREATE STREAM R(A int, B int);
CREATE STREAM S(B int, C int);

(SELECT R.A, R.B FROM R ORDER BY R.A DESC, R.B LIMIT 3) UNION ALL (SELECT S.C, S.B FROM S WHERE S.C > 1);

(SELECT R.B FROM R ORDER BY 1 LIMIT 2) UNION (SELECT S.B FROM S ORDER BY S.B DESC LIMIT 2);

(SELECT R.A, SUM(R.B) AS s FROM R GROUP BY R.A ORDER BY s DESC, R.A LIMIT 2) EXCEPT (SELECT S.B, S.C FROM S);

SELECT S.B FROM S INTERSECT (SELECT R.A FROM R ORDER BY R.A LIMIT 4);
