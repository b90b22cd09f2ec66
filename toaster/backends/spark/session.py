"""One shared SparkSession per process, with settings that start fast and quietly."""
from __future__ import annotations

import os

_session = None
# errors only: Spark's default log4j profile prints WARN lines at every start
_LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def get_spark(master: str | None = None):
    """The process-wide SparkSession (created on first use; `master` default local[*], or
    $TOASTER_SPARK_MASTER)."""
    global _session
    if _session is not None:
        return _session
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    _session = (SparkSession.builder
                .master(master or os.environ.get("TOASTER_SPARK_MASTER", "local[*]"))
                .appName("toaster")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
                        f"-Dlog4j2.configurationFile=file:{_LOG_CONFIG}")
                .getOrCreate())
    _session.sparkContext.setLogLevel("ERROR")
    return _session
