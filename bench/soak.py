"""`python -m bench --soak`: memory over a long stream with deletions.

The stream is a sliding window: every batch inserts rows with new, never-seen strings and deletes
the rows inserted `window` rows earlier, so the live state stays constant while the number of
distinct strings ever seen grows without bound. Each backend runs in a child process of its own
(a clean RSS), which samples its resident set size (VmRSS) and peak (VmHWM) from /proc every 5% of
the stream, with those of its descendants (Spark's JVM and Python workers). The table gives the
peak RSS at 10%, 50% and 100% of the events: flat memory means
the 100% column stays close to the 10% one.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

SOAK_SQL = """
CREATE STREAM E(ID int, NAME string, V int);
SELECT E.NAME, SUM(E.V) AS v FROM E GROUP BY E.NAME;
SELECT SUBSTRING(E.NAME, 0, 5) AS p, COUNT(*) AS n FROM E GROUP BY SUBSTRING(E.NAME, 0, 5);
SELECT COUNT(*) AS n, SUM(E.V) AS v FROM E;
"""


def _rows(lo: int, hi: int):
    ids = np.arange(lo, hi, dtype=np.int64)
    names = pa.array([f"s{j:010d}" for j in range(lo, hi)], pa.string())
    return ids, names, ids % 97


def soak_batches(events: int, window: int, batch: int):
    """Batches of `batch` updates: batch/2 inserts of new rows, then (once the window is full)
    the deletion of as many of the oldest rows."""
    from toaster.runtime.batch import Batch
    half = max(1, batch // 2)
    done, nxt = 0, 0
    while done < events:
        lo, hi = nxt, nxt + half
        cols = [_rows(lo, hi)]
        signs = [np.ones(half, np.int8)]
        if lo >= window:
            cols.append(_rows(lo - window, hi - window))
            signs.append(-np.ones(half, np.int8))
        nxt = hi
        n = sum(len(s) for s in signs)
        done += n
        yield n, Batch("E", np.concatenate(signs),
                       (np.concatenate([c[0] for c in cols]), pa.concat_arrays([c[1] for c in cols]),
                        np.concatenate([c[2] for c in cols])))


def _rss_mb() -> tuple[float, float]:
    """(resident set, peak) in MB of this process and its descendants (Spark's JVM and its
    Python workers; none for interp and llvm); the peak sums each process's own peak."""
    rss = peak = 0
    for pid in _process_tree(os.getpid()):
        fields = {}
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    fields[k] = v
        except OSError:          # the process ended meanwhile
            continue
        if "VmRSS" in fields:
            rss += int(fields["VmRSS"].split()[0])
            peak += int(fields["VmHWM"].split()[0])
    return rss / 1024, peak / 1024


def _process_tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def child(backend: str, events: int, window: int, batch: int, time_limit: float) -> None:
    """Run one backend; print one JSON object per sample."""
    from toaster.pipeline import compile_sql
    engine = compile_sql(SOAK_SQL, mode="batch").engine(backend)
    step = max(1, events // 20)
    next_sample, done, t0 = step, 0, time.perf_counter()
    applied, batches = 0.0, 0          # apply time and batches since the last sample
    for n, b in soak_batches(events, window, batch):
        a0 = time.perf_counter()
        engine.apply(b)
        applied += time.perf_counter() - a0
        batches += 1
        done += n
        if done >= next_sample or done >= events:
            engine.results()       # the views are read too, as a user would
            rss, peak = _rss_mb()
            elapsed = time.perf_counter() - t0
            print(json.dumps({"backend": backend, "events": done, "rss_mb": round(rss, 1),
                              "peak_mb": round(peak, 1), "seconds": round(elapsed, 1),
                              "batch_ms": round(1000 * applied / max(batches, 1), 2)}), flush=True)
            applied, batches = 0.0, 0
            next_sample += step
            if elapsed > time_limit:
                break


def run_soak(backends, events: int, window: int, batch: int, time_limit: float, out: str, log=print) -> list[dict]:
    samples = []
    for backend in backends:
        log(f"soak: {backend}, {events:,} events, window {window:,}, batch {batch:,}")
        cmd = [sys.executable, "-m", "bench.soak", backend, str(events), str(window), str(batch), str(time_limit)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            log(f"soak: {backend} failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
        samples += [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "soak.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, ["backend", "events", "rss_mb", "peak_mb", "seconds", "batch_ms"])
        w.writeheader()
        w.writerows(samples)
    table = soak_table(samples, events, window, batch)
    with open(os.path.join(out, "soak.md"), "w") as f:
        f.write(table + "\n")
    return samples


def soak_table(samples, events: int, window: int, batch: int) -> str:
    """Peak RSS (MB) and mean apply time per batch (ms, over the 5% of the stream before the
    point) at 10%, 50% and 100% of the stream per backend (the last sample at or before each
    point; a run cut by the time limit shows how far it got): flat means the 100% columns stay
    close to the 10% ones."""
    lines = [f"soak: sliding window of {window:,} rows, every string new, batches of {batch:,}, {events:,} events",
             "", "| backend | events run | s | peak RSS 10% | peak RSS 50% | peak RSS 100% | RSS at end "
             "| ms/batch 10% | ms/batch 50% | ms/batch 100% |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for backend in dict.fromkeys(s["backend"] for s in samples):
        mine = [s for s in samples if s["backend"] == backend]

        def at(frac, key="peak_mb", fmt="{:.0f} MB"):
            got = [s for s in mine if s["events"] <= frac * events + 1]
            ok = got and mine[-1]["events"] >= frac * events and got[-1].get(key) is not None
            return fmt.format(got[-1][key]) if ok else "-"
        last = mine[-1]
        ms = [at(f, "batch_ms", "{:.1f}") for f in (0.1, 0.5, 1.0)]
        lines.append(f"| {backend} | {last['events']:,} | {last['seconds']:.0f} | {at(0.1)} | {at(0.5)} | "
                     f"{at(1.0)} | {last['rss_mb']:.0f} MB | {' | '.join(ms)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    b, n, w, bs, tl = sys.argv[1:6]
    child(b, int(n), int(w), int(bs), float(tl))
