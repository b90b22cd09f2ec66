"""What one benchmark run may use and did use: wall-time limits and the resident-set high-water mark."""
from __future__ import annotations

import contextlib
import signal
import threading


def _status_kb(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_memory() -> int | None:
    """Reset the resident-set high-water mark; returns the current RSS in kB (None if unknown)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kb("VmRSS")


def peak_memory_mb(start_kb: int | None) -> float | None:
    hwm = _status_kb("VmHWM")
    if start_kb is None or hwm is None:
        return None
    return max(0.0, (hwm - start_kb) / 1024.0)


# ------------------------------------------------------------------------------ time
class RunTimeout(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: float | None):
    """Interrupt the block with RunTimeout after `seconds` of wall time (a Python-level signal:
    native code is interrupted when it returns). A no-op off the main thread or without SIGALRM."""
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def fire(signum, frame):
        raise RunTimeout(f"hard time limit of {seconds:.0f}s reached")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def hard_limit(time_limit: float) -> float:
    """Wall-time cap of one run (compile + feed + final read): a single slow batch or refresh
    cannot stall the benchmark."""
    return 3 * time_limit + 20
