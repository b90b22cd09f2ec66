"""ReadAhead: the source's items in order, its error where it happened, the thread stopped on close."""
import threading
import time

import pytest

from toaster.errors import InputError
from toaster.runtime.read_ahead import ReadAhead


def test_items_in_source_order():
    assert list(ReadAhead(iter(range(1000)), depth=3)) == list(range(1000))


def test_error_after_the_items_before_it():
    def source():
        yield from range(5)
        raise InputError("r.csv:6:2: bad value")

    got = []
    with pytest.raises(InputError, match="r.csv:6:2"):
        for x in ReadAhead(source()):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]


def test_close_stops_the_reader_and_closes_the_source():
    closed = threading.Event()
    produced = []

    def source():
        try:
            for i in range(10**9):
                produced.append(i)
                yield i
        finally:
            closed.set()

    ra = ReadAhead(source(), depth=2)
    assert next(ra) == 0
    ra.close()
    assert closed.wait(5)
    n = len(produced)
    time.sleep(0.2)
    assert len(produced) == n and n <= 5        # bounded: at most depth ahead, then stopped
    with pytest.raises(StopIteration):
        next(ra)
