-- lower-case keywords and names; an alias used in another case
create stream r(a int, b INTEGER);
Create Stream s(b int, c int);

select R1.a, sum(S.C) as total from r r1, s where r1.b = s.B group by r1.A;
