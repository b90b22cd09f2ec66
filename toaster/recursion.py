"""Deep recursion inside toaster's passes and evaluators.

The IRs are trees and most passes are naturally recursive over them, so a query nested 50 deep
(scalar subqueries, long arithmetic, a 5,000-way OR before it is flattened) can need more Python
frames than the interpreter's default limit (1000) and more C stack than the main thread has.
`deep_call(fn, ...)` runs fn; if it overflows the default limit, it runs fn again with a raised
recursion limit on a thread with a large stack (the wrapped functions are pure); a
nesting deeper than even that limit is refused with an UnsupportedError naming the stage,
never a RecursionError traceback.

Documented limit: scalar subqueries nested up to MAX_SUBQUERY_DEPTH deep
(toaster.frontend.resolve checks it), expressions up to the frame limit below.
"""
from __future__ import annotations

import functools
import sys
import threading

from toaster.errors import UnsupportedError

RECURSION_LIMIT = 60_000        # Python frames while a deep call runs
STACK_BYTES = 512 * 1024 * 1024  # virtual stack of the worker thread (reserved, touched on demand)
MAX_SUBQUERY_DEPTH = 100        # scalar/EXISTS/IN subqueries nested deeper are refused

_local = threading.local()
_lock = threading.Lock()
_active = 0
_saved_limit = None


def _raise_limit() -> None:
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1


def _restore_limit() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0 and _saved_limit is not None:
            sys.setrecursionlimit(_saved_limit)


def deep_call(fn, *args, what: str = "the program", **kw):
    """fn(*args, **kw) with room for deep recursion; a RecursionError becomes UnsupportedError."""
    if getattr(_local, "deep", False):       # already on a deep thread: just call
        return fn(*args, **kw)
    try:
        # the common case, at no cost: the callers are pure (passes return new IR, the evaluator
        # returns values), so after a RecursionError the call is simply run again with room
        return fn(*args, **kw)
    except RecursionError:
        pass
    result, error = [], []

    def run():
        _local.deep = True
        try:
            result.append(fn(*args, **kw))
        except BaseException as e:  # handed to the calling thread below
            error.append(e)

    _raise_limit()
    try:
        with _lock:
            old = threading.stack_size()
            threading.stack_size(STACK_BYTES)
            try:
                worker = threading.Thread(target=run, name="toaster-deep", daemon=True)
                worker.start()
            finally:
                threading.stack_size(old)
        worker.join()
    finally:
        _restore_limit()
    if error:
        e = error[0]
        if isinstance(e, RecursionError):
            raise UnsupportedError(f"{what} is nested too deeply for toaster "
                                   f"(more than {RECURSION_LIMIT} levels of recursion)") from e
        raise e
    return result[0]


def deep(what: str):
    """Decorator form of deep_call."""
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kw):
            return deep_call(fn, *args, what=what, **kw)
        return inner
    return wrap
