"""Built-in scalar functions (DIALECT.md §4): arities and result types for type checking.

Their runtime meaning is implemented by toaster.calculus.functions (the evaluator) and, for the
test oracle, by printer.oracle_sql's DuckDB translations; tests/test_frontend.py checks that the
two agree. Decisions on the undocumented points (DIALECT.md §8):
  * regexp_match(pattern, s) is an UNANCHORED search (POSIX regexec semantics): 1 if the pattern
    matches anywhere in s (Python re.search), else 0. Anchor with ^...$ for a full match.
  * cast_int of a float truncates toward zero; of a string parses a leading integer like atoi
    (no digits: 0); of a date gives YYYYMMDD. cast_float of a date gives YYYYMMDD as a float.
  * cast_string of a float uses Python's repr (e.g. '2.5', '2.0'); of a date 'YYYY-MM-DD'.
  * dihedral_angle(p1, p2, p3, p4) is the standard signed torsion angle
        atan2(|b2| * b1 . (b2 x b3), (b1 x b2) . (b2 x b3)),  b1 = p2-p1, b2 = p3-p2, b3 = p4-p3
    in radians, in (-pi, pi].
  * vector_angle is acos(u.v / (|u| |v|)), clamped into [-1, 1] before acos.
  * hash(x) depends on the runtime (DIALECT.md §4); it has no DuckDB counterpart, so oracle_sql
    refuses it.
"""
from __future__ import annotations

from dataclasses import dataclass

from toaster.types import INT, FLOAT, DATE, STRING, Type, promote


@dataclass(frozen=True)
class Builtin:
    name: str                  # lower-case
    min_args: int
    max_args: int | None       # None: unbounded


BUILTINS = {b.name: b for b in [
    Builtin("listmin", 2, None), Builtin("listmax", 2, None), Builtin("date_part", 2, 2),
    Builtin("regexp_match", 2, 2), Builtin("substring", 3, 3), Builtin("cast_int", 1, 1),
    Builtin("cast_float", 1, 1), Builtin("cast_string", 1, 1), Builtin("cast_date", 1, 1),
    Builtin("vec_length", 3, 3), Builtin("vector_angle", 6, 6), Builtin("dihedral_angle", 12, 12),
    Builtin("radians", 1, 1), Builtin("degrees", 1, 1), Builtin("pow", 2, 2), Builtin("hash", 1, 1),
]}

# Functions of standard SQL that only make sense with NULLs: refused with a clear message.
NULL_FUNCTIONS = {"coalesce", "nullif", "ifnull", "isnull", "nvl"}


def builtin_result_type(name: str, arg_types: list[Type]) -> Type | str:
    """The result type of a built-in call, or an error message (one line) on a type error."""
    def numeric(i):
        return arg_types[i].is_numeric

    match name:
        case "listmin" | "listmax":
            if all(t.is_numeric for t in arg_types):
                t = arg_types[0]
                for u in arg_types[1:]:
                    t = promote(t, u)
                return t
            if len(set(arg_types)) == 1:
                return arg_types[0]
            return f"{name} needs arguments of one type, got {', '.join(map(str, arg_types))}"
        case "date_part":
            if arg_types[0] != STRING or arg_types[1] != DATE:
                return f"date_part needs ('year'|'month'|'day', date), got ({arg_types[0]}, {arg_types[1]})"
            return INT
        case "regexp_match":
            if arg_types != [STRING, STRING]:
                return f"regexp_match needs (string pattern, string), got ({', '.join(map(str, arg_types))})"
            return INT
        case "substring":
            if arg_types[0] != STRING or not (arg_types[1] == INT and arg_types[2] == INT):
                return f"substring needs (string, int, int), got ({', '.join(map(str, arg_types))})"
            return STRING
        case "cast_int":
            return INT
        case "cast_float":
            return FLOAT
        case "cast_string":
            return STRING
        case "cast_date":
            if arg_types[0] not in (STRING, DATE):
                return f"cast_date needs a string, got {arg_types[0]}"
            return DATE
        case "hash":
            return INT
    # the numeric math functions
    for i in range(len(arg_types)):
        if not numeric(i):
            return f"{name} needs numbers, got {arg_types[i]} as argument {i + 1}"
    return FLOAT
