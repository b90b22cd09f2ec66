"""A throw-away Spark standalone cluster for tests: one master and N workers launched from the
pyspark installation (`bin/spark-class`), on 127.0.0.1 with free ports, work and log dirs under
a given directory, 1 core each. `kill_worker(i)` SIGKILLs a worker's whole process tree (its
JVM, the executor JVM it launched and that executor's Python workers), as a lost node would be.
`stop()` kills everything it started (also after a failed start)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool((home and os.path.exists(os.path.join(home, "bin", "java"))) or shutil.which("java"))


def spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                if int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (Linux /proc)."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(_children(p))
    return tree


def _kill_tree(pid: int) -> None:
    for p in process_tree(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


class StandaloneCluster:
    def __init__(self, directory: Path, workers: int = 2, worker_memory: str = "1g",
                 start_timeout: float = 90.0):
        self.dir = Path(directory)
        self.n_workers = workers
        self.worker_memory = worker_memory
        self.start_timeout = start_timeout
        self.master_port, self.webui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.master_port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self._logs: list = []

    def _env(self) -> dict:
        from toaster.backends.spark.session import _LOG_CONFIG as log_config   # errors only
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
                   SPARK_LOG_DIR=str(self.dir / "logs"), SPARK_PID_DIR=str(self.dir / "pids"),
                   SPARK_DAEMON_JAVA_OPTS=f"-XX:+UseSerialGC -Dlog4j2.configurationFile=file:{log_config}")
        env.pop("SPARK_HOME", None)          # the pyspark installation's own
        env.pop("PYTHONPATH", None)          # executors get toaster from the driver (shipped)
        return env

    def _launch(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.dir / f"{name}.log", "wb")
        self._logs.append(log)
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                                stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                                start_new_session=True)

    def start(self) -> "StandaloneCluster":
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.master = self._launch("master", [
                "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.master_port), "--webui-port", str(self.webui_port)])
            for i in range(self.n_workers):
                work = self.dir / f"work-{i}"
                work.mkdir(exist_ok=True)
                self.workers.append(self._launch(f"worker-{i}", [
                    "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                    "--port", str(free_port()), "--webui-port", str(free_port()),
                    "--cores", "1", "--memory", self.worker_memory, "--work-dir", str(work)]))
            self._wait_alive(self.n_workers)
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return sum(w.get("state") == "ALIVE" for w in self.state().get("workers", []))
        except OSError:
            return 0

    def _wait_alive(self, n: int) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for p in [self.master, *self.workers]:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited at start (code {p.returncode}): "
                                       f"see {self.dir}/*.log")
            if self.alive_workers() >= n:
                return
            time.sleep(0.5)
        raise TimeoutError(f"the standalone cluster did not have {n} workers within "
                           f"{self.start_timeout:g} s: see {self.dir}/*.log")

    def executor_pids(self, i: int) -> list[int]:
        """The processes worker i launched (executor JVMs and their Python workers)."""
        return process_tree(self.workers[i].pid)[1:]

    def kill_worker(self, i: int) -> None:
        _kill_tree(self.workers[i].pid)
        self.workers[i].wait(timeout=30)

    def stop(self) -> None:
        for p in [*self.workers, self.master]:
            if p is not None and p.poll() is None:
                _kill_tree(p.pid)
        for p in [*self.workers, self.master]:
            if p is not None:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
        for log in self._logs:
            log.close()
