"""mutually_exclusive (toaster.calculus.exclusive): whenever it says two disjuncts of an OR cannot
both hold, no values make both hold -- checked by evaluating generated conditions on a grid of
values around the bounds, including the points where ranges meet."""
import itertools

from hypothesis import given, settings, strategies as st

from toaster.calculus.exclusive import mutually_exclusive
from toaster.frontend import ast as A
from toaster.frontend.parser import parse_sql

OPS = ["<", "<=", ">", ">="]
SIDES = ["R.X - R.Y", "R.Y - R.X", "R.X", "R.Y"]
CONSTS = ["0", "1", "-1", "0.5", "-0.5", "2"]


def _condition():
    return st.tuples(st.sampled_from(SIDES), st.sampled_from(OPS), st.sampled_from(SIDES + CONSTS),
                     st.booleans())


def _sql(side, op, other, swap):
    return f"{other} {op} {side}" if swap else f"{side} {op} {other}"


def _or_args(text):
    q = parse_sql("CREATE STREAM R(X float, Y float);\nSELECT COUNT(*) AS n FROM R WHERE " + text + ";")
    found = []

    def walk(node):
        if isinstance(node, A.Or):
            found.append(node)
        for f in getattr(node, "__dataclass_fields__", ()):
            v = getattr(node, f)
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if hasattr(x, "__dataclass_fields__"):
                    walk(x)
    walk(q)
    return found[0].args


def _holds(cond_sql, x, y):
    return eval(cond_sql.replace("R.X", "x").replace("R.Y", "y"), {}, {"x": x, "y": y})


GRID = [v / 2 for v in range(-8, 9)]


@settings(max_examples=300, deadline=None)
@given(_condition(), _condition())
def test_exclusive_disjuncts_never_hold_together(a, b):
    sa, sb = _sql(*a), _sql(*b)
    if a[0] == a[2] or b[0] == b[2]:
        return                                  # `x - y < x - y`: not the shapes this is about
    args = _or_args(f"({sa}) OR ({sb})")
    if mutually_exclusive(args):
        both = [(x, y) for x, y in itertools.product(GRID, GRID) if _holds(sa, x, y) and _holds(sb, x, y)]
        assert not both, (sa, sb, both[:3])


def test_order_book_disjuncts_are_exclusive_and_touching_ranges_are_not():
    # decided by the grid check above for every generated pair; these two are the shapes that matter
    assert mutually_exclusive(_or_args("R.X - R.Y > 1 OR R.Y - R.X > 1"))
    assert not mutually_exclusive(_or_args("R.X - R.Y >= 1 OR R.Y - R.X >= -1"))
