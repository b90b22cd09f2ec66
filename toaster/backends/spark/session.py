"""One shared SparkSession per process, with settings that start fast and quietly.

Starting Spark launches a JVM. If the start fails, times out ($TOASTER_SPARK_START_TIMEOUT
seconds, default 300) or is interrupted, the JVM this attempt launched is killed and pyspark's
process-wide state is reset, so no JVM is left running and a later get_spark starts afresh.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_session = None
# errors only: Spark's default log4j profile prints WARN lines at every start
_LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
START_TIMEOUT_ENV = "TOASTER_SPARK_START_TIMEOUT"
DEFAULT_START_TIMEOUT = 300.0
# the driver JVM's heap (local masters: the executors too). Fixed at JVM start; Spark's default
# of 1 GiB ran out in the Spark SQL baseline at TPC-H SF 1. A maximum, not a reservation.
DRIVER_MEMORY_ENV = "TOASTER_SPARK_DRIVER_MEMORY"
DEFAULT_DRIVER_MEMORY = "8g"


def get_spark(master: str | None = None):
    """The process-wide SparkSession (created on first use; `master` default local[*], or
    $TOASTER_SPARK_MASTER). Raises EngineStartError when Spark does not start."""
    global _session
    if _session is not None:
        if spark_alive():
            return _session
        discard_session()      # its JVM died (e.g. out of memory): start a fresh one
    from toaster.errors import EngineStartError
    timeout = _start_timeout()
    before = set(_spark_jvms())
    lock, state = threading.Lock(), {"done": False, "timed_out": False}

    def on_timeout():          # kill the JVM: pyspark's wait for it then fails and we clean up
        with lock:
            if state["done"]:
                return
            state["timed_out"] = True
        _kill(set(_spark_jvms()) - before)
    watchdog = threading.Timer(timeout, on_timeout)
    watchdog.daemon = True
    watchdog.start()
    try:
        session = _build(master)
    except BaseException as e:
        with lock:
            state["done"] = True
        watchdog.cancel()
        _reset_pyspark(set(_spark_jvms()) - before)
        if state["timed_out"]:
            raise EngineStartError(f"Spark did not start within {timeout:g} s (set {START_TIMEOUT_ENV} "
                                   "to wait longer)") from None
        if isinstance(e, Exception):
            lines = str(e).strip().splitlines()
            raise EngineStartError(f"Spark did not start: {type(e).__name__}"
                                   f"{': ' + lines[0] if lines else ''}") from None
        raise                  # KeyboardInterrupt, SystemExit: after the clean-up
    with lock:
        state["done"] = True
    watchdog.cancel()
    if state["timed_out"]:     # the timer fired as the start completed: the JVM is gone
        _reset_pyspark(set(_spark_jvms()) - before)
        raise EngineStartError(f"Spark did not start within {timeout:g} s (set {START_TIMEOUT_ENV} "
                               "to wait longer)")
    _session = session
    return session


def spark_alive() -> bool:
    """Whether the session's JVM still runs and its SparkContext is not stopped (a JVM that ran
    out of memory exits: see -XX:+ExitOnOutOfMemoryError below)."""
    if _session is None:
        return False
    try:
        from pyspark import SparkContext
        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is None or (proc is not None and proc.poll() is not None):
            return False
        sc = _session.sparkContext
        return sc._jsc is not None and not sc._jsc.sc().isStopped()
    except Exception:          # py4j cannot reach the JVM
        return False


def discard_session() -> None:
    """Forget the session and kill its JVM, so the next get_spark starts afresh (after the JVM
    died or its context stopped: every later call on it would fail or hang)."""
    global _session
    _session = None
    _reset_pyspark(set(_spark_jvms()))


def session_config() -> dict:
    """The SparkSession settings of every toaster session (the engine's and the bench's Spark SQL
    baseline's: one session, so the same settings for a fair ratio; bench/spark_state too)."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.host": "127.0.0.1",
        # the JVM talks to its Python workers over Unix domain sockets: over loopback TCP every
        # task's small writes waited out Nagle + delayed ACK (~40 ms), which doubled the fixed
        # cost of a stage (docs/spark-engine.md, "Spark's fixed cost per stage")
        "spark.python.unix.domain.socket.enabled": "true",
        "spark.driver.memory": os.environ.get(DRIVER_MEMORY_ENV, DEFAULT_DRIVER_MEMORY),
        # a JVM out of heap exits at once, so the driver fails fast with a dead gateway instead
        # of waiting forever on a scheduler whose event loop died of the error
        "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
                                         "-XX:+ExitOnOutOfMemoryError "
                                         f"-Dlog4j2.configurationFile=file:{_LOG_CONFIG}",
    }


def _build(master):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # executors run the driver's interpreter (pyspark's default is whatever `python3` is on
    # their PATH, which may lack toaster's dependencies); set PYSPARK_PYTHON to override
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    master = master or os.environ.get("TOASTER_SPARK_MASTER", "local[*]")
    builder = SparkSession.builder.master(master).appName("toaster")
    for k, v in session_config().items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        ship_toaster(session.sparkContext)
    return session


def ship_toaster(sc) -> None:
    """Put the driver's copy of the toaster package on every executor's Python path (a zip
    through `addPyFile`): the generated blocks import toaster.functions and the runtime's
    helpers, and on a cluster executors must run the same code as the driver, installed or
    not (the shipped copy comes first on their sys.path)."""
    import atexit
    import tempfile
    import zipfile
    import toaster
    package = os.path.dirname(os.path.abspath(toaster.__file__))
    fd, path = tempfile.mkstemp(prefix="toaster-package-", suffix=".zip")
    os.close(fd)
    atexit.register(_remove, path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for folder, subdirs, files in os.walk(package):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith((".pyc", ".pyo")):
                    full = os.path.join(folder, f)
                    z.write(full, os.path.relpath(full, os.path.dirname(package)))
    sc.addPyFile(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _start_timeout() -> float:
    from toaster.errors import UsageError
    text = os.environ.get(START_TIMEOUT_ENV)
    if text is None:
        return DEFAULT_START_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{START_TIMEOUT_ENV} must be a positive number of seconds, not {text!r}")
    return value


def _spark_jvms() -> list[int]:
    """Pids of the Spark JVMs this process launched (its children running SparkSubmit or the
    spark-submit script that becomes it; Linux /proc, nothing elsewhere)."""
    me = str(os.getpid())
    out = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = f.read().rsplit(b")", 1)[1].split()[1].decode()
            if ppid != me:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
                if b"SparkSubmit" in cmd or b"spark-submit" in cmd:   # the JVM, or its launcher script
                    out.append(int(pid))
        except (OSError, IndexError):
            continue
    return out


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)     # not reaped here: pyspark's Popen must see it exit
        except OSError:
            pass


def _reset_pyspark(jvms) -> None:
    """Kill the JVMs of a failed start and forget pyspark's gateway, context and session."""
    _kill(jvms)
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return
    gateway = SparkContext._gateway
    if gateway is not None:
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            _kill([proc.pid])
        try:
            gateway.close()
        except Exception:
            pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
