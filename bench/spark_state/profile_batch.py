"""Where the wall time of one spark-engine batch goes (issue 10, throughput): Spark's event log.

    python -m bench.spark_state.profile_batch tpch_q3 --data DIR --batch 100000 --batches 4

Runs the bench's TPC-H stream (DIR as for input_cpu.py) through `SparkEngine.apply_many` on a
session with Spark's event log on (local[2], the session settings of toaster's get_spark), then
reads the log: per batch the driver's time outside the job (planning, slicing, result folding),
and per stage of its job the stage's wall time and its tasks' components (Spark's own task
metrics: scheduler delay = duration - deserialize - run - result serialization - getting
result; the Python worker's time is inside the executor run time). Every batch is printed;
numbers are milliseconds, task components summed over tasks.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import tempfile
import time


def _session(log_dir: str, extra: dict):
    from pyspark.sql import SparkSession
    from toaster.backends.spark import session as S
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    b = SparkSession.builder.master("local[2]").appName("toaster-profile")
    settings = {**S.session_config(), "spark.eventLog.enabled": "true", "spark.eventLog.dir": log_dir,
                "spark.eventLog.compress": "false"}
    for k, v in settings.items():
        b = b.config(k, v)
    for k, v in extra.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    S._session = s
    return s


def read_log(log_dir: str) -> dict:
    """job id -> {'start', 'end', 'stages': {stage id: {...}}} from the event log."""
    files = sorted(p for p in glob.glob(os.path.join(log_dir, "**"), recursive=True)
                   if os.path.isfile(p) and "appstatus" not in os.path.basename(p))
    jobs, stage_job = {}, {}
    for line in (line for path in files for line in open(path)):
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerJobStart":
            jobs[ev["Job ID"]] = {"start": ev["Submission Time"], "stages": {}}
            for s in ev["Stage IDs"]:
                stage_job[s] = ev["Job ID"]
        elif kind == "SparkListenerJobEnd":
            jobs[ev["Job ID"]]["end"] = ev["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = ev["Stage Info"]
            j = stage_job.get(info["Stage ID"])
            if j is not None and "Submission Time" in info:
                st = jobs[j]["stages"].setdefault(info["Stage ID"], _stage())
                st["wall"] = info["Completion Time"] - info["Submission Time"]
                st["name"] = info["Stage Name"].split(" at ")[0]
                st["tasks"] = info["Number of Tasks"]
        elif kind == "SparkListenerTaskEnd":
            j = stage_job.get(ev["Stage ID"])
            if j is None:
                continue
            st = jobs[j]["stages"].setdefault(ev["Stage ID"], _stage())
            ti, m = ev["Task Info"], ev.get("Task Metrics") or {}
            dur = ti["Finish Time"] - ti["Launch Time"]
            deser, run = m.get("Executor Deserialize Time", 0), m.get("Executor Run Time", 0)
            rser = m.get("Result Serialization Time", 0)
            getting = (ti["Finish Time"] - ti["Getting Result Time"]) if ti.get("Getting Result Time") else 0
            st["task"] += dur
            st["deser"] += deser
            st["run"] += run
            st["sched"] += max(0, dur - deser - run - rser - getting)
            st["gc"] += m.get("JVM GC Time", 0)
            sr, sw = m.get("Shuffle Read Metrics", {}), m.get("Shuffle Write Metrics", {})
            st["fetch_wait"] += sr.get("Fetch Wait Time", 0)
            st["shuffle_read_kb"] += (sr.get("Local Bytes Read", 0) + sr.get("Remote Bytes Read", 0)) / 1024
            st["shuffle_write_ms"] += sw.get("Shuffle Write Time", 0) / 1e6
            st["shuffle_write_kb"] += sw.get("Shuffle Bytes Written", 0) / 1024
            st["result_kb"] += m.get("Result Size", 0) / 1024
    return jobs


def _stage() -> dict:
    return dict(wall=0, name="?", tasks=0, task=0, deser=0, run=0, sched=0, gc=0, fetch_wait=0,
                shuffle_read_kb=0.0, shuffle_write_ms=0.0, shuffle_write_kb=0.0, result_kb=0.0)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("query")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, default=100000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--conf", action="append", default=[], help="extra Spark setting KEY=VALUE")
    ap.add_argument("--native-opt", type=int, default=None, help="LLVM opt level of the partition program")
    a = ap.parse_args(argv)
    from bench.spark_state.common import tpch_engine_and_batches
    from toaster.backends.spark.runtime import last_job_id

    log_dir = tempfile.mkdtemp(prefix="toaster-eventlog-")
    spark = _session(log_dir, dict(kv.split("=", 1) for kv in a.conf))
    sc = spark.sparkContext
    engine, groups = tpch_engine_and_batches(a.query, a.data, spark, batch=a.batch, batches=a.batches,
                                             partitions=a.partitions,
                                             **({} if a.native_opt is None else {"native_opt": a.native_opt}))
    batches = []
    for group in groups:
        j0 = last_job_id(sc)
        c0, t0 = time.process_time(), time.time()
        engine.apply_many(group)
        batches.append((j0, last_job_id(sc), t0 * 1000, time.time() * 1000, (time.process_time() - c0) * 1000,
                        engine.jobs_last_batch, engine.stages_last_batch))
    engine.close()
    spark.stop()
    jobs = read_log(log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    for i, (j0, j1, t0, t1, cpu, nj, ns) in enumerate(batches):
        in_jobs = sum(jobs[j]["end"] - jobs[j]["start"] for j in range(j0 + 1, j1 + 1) if j in jobs)
        print(f"{a.query} batch {i + 1}: wall {t1 - t0:.0f} ms = jobs {in_jobs:.0f} + driver outside jobs "
              f"{t1 - t0 - in_jobs:.0f}; driver CPU {cpu:.0f} ms; {nj} job(s), {ns} stage(s)")
        for j in range(j0 + 1, j1 + 1):
            for sid, st in sorted(jobs.get(j, {}).get("stages", {}).items()):
                print(f"  job {j} stage {sid} {st['name']:<24} {st['tasks']} tasks wall {st['wall']:5.0f}"
                      f" | tasks: run {st['run']:5.0f} deser {st['deser']:4.0f} sched {st['sched']:4.0f}"
                      f" gc {st['gc']:3.0f} fetch-wait {st['fetch_wait']:3.0f} shuffle-write "
                      f"{st['shuffle_write_ms']:4.0f} ms {st['shuffle_write_kb']:6.0f} KB, read "
                      f"{st['shuffle_read_kb']:6.0f} KB, result {st['result_kb']:5.0f} KB")


if __name__ == "__main__":
    main()
