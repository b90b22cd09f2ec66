"""Scalar types shared by every stage.

Runtime representation (all backends agree on it):
  INT    -> Python int / i64
  FLOAT  -> Python float / double
  DATE   -> int YYYYMMDD (so numeric order is date order); printed as YYYY-MM-DD
  STRING -> Python str (native backends dictionary-encode to i64 ids)
  BOOL   -> Python bool / i1
"""
from __future__ import annotations

import enum


class Type(enum.Enum):
    INT = "int"
    FLOAT = "float"
    DATE = "date"
    STRING = "string"
    BOOL = "bool"

    def __str__(self) -> str:
        return self.value

    @property
    def is_numeric(self) -> bool:
        return self in (Type.INT, Type.FLOAT)


INT, FLOAT, DATE, STRING, BOOL = Type.INT, Type.FLOAT, Type.DATE, Type.STRING, Type.BOOL


def type_from_name(name: str) -> Type:
    """Map a declared SQL column type (already lower-cased, without length) to a Type."""
    n = name.lower()
    if n in ("int", "integer", "bigint"):
        return INT
    if n in ("float", "double", "decimal", "real"):
        return FLOAT
    if n == "date":
        return DATE
    if n in ("string", "char", "varchar", "text"):
        return STRING
    if n in ("bool", "boolean"):
        return BOOL
    raise KeyError(name)


def promote(a: Type, b: Type) -> Type:
    """Numeric promotion for + - *: int op int is int, anything with a float is float."""
    if a == FLOAT or b == FLOAT:
        return FLOAT
    return INT


def date_to_int(text: str) -> int:
    """'1997-03-04' -> 19970304. Raises ValueError on a malformed date."""
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"bad date {text!r} (expected YYYY-MM-DD)")
    y, m, d = (int(p) for p in parts)
    if not (1 <= m <= 12 and 1 <= d <= 31):
        raise ValueError(f"bad date {text!r} (expected YYYY-MM-DD)")
    return y * 10000 + m * 100 + d


def int_to_date(v: int) -> str:
    v = int(v)
    return f"{v // 10000:04d}-{v // 100 % 100:02d}-{v % 100:02d}"
