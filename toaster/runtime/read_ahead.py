"""Read the next batches while the engine applies the current one.

Arrow's CSV parser and the LLVM engine's native triggers both run without Python's GIL, so a
reader thread parsing batch k+1 overlaps the native apply of batch k (and, in `--run`, the JIT
compilation of the program) on a second core. The order of the batches is the source's; at most
`depth` batches wait in the queue, so memory stays O(depth x batch). A reader error (a bad line:
InputError) is raised by the consumer's `next()` at the place where that batch would have come,
after every batch before it, exactly as without the thread.
"""
from __future__ import annotations

import queue
import threading

_DONE = object()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


class ReadAhead:
    """An iterator over `source`'s items, produced by a daemon thread up to `depth` ahead.
    close() (or leaving a `with` block) stops the thread and closes the source."""

    def __init__(self, source, depth: int = 2):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._produce, args=(iter(source),),
                                        name="toaster-read-ahead", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, it) -> None:
        try:
            for item in it:
                if not self._put(item):
                    break
            else:
                self._put(_DONE)
        except BaseException as e:      # handed to the consumer, raised there
            self._put(_Failed(e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is _DONE:
            self._finished = True
            raise StopIteration
        if isinstance(item, _Failed):
            self._finished = True
            raise item.error
        return item

    def close(self) -> None:
        self._finished = True
        self._stop.set()
        while True:                     # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
