"""Benchmark output: CSV of every run, a Markdown table, and PNG plots (matplotlib, Agg).

    write_csv(results, "out/results.csv")
    md = markdown_table(results)                  # rates and ratios to DuckDB per batch size
    plot_rates(results, "out/")                   # rates_bs<N>.png: log-scale rate per query
    plot_sweep(results, "out/sweep.png")          # rate vs batch size per query (Hot Dog Fig. 7)
"""
from __future__ import annotations

import csv
import os
from collections import OrderedDict

from bench.harness import RunResult

CSV_FIELDS = ["dataset", "query", "backend", "strategy", "mode", "batch_size", "status", "events",
              "stream_events", "fraction", "compile_s", "maint_s", "rate", "duckdb_rate", "ratio",
              "sparksql_rate", "sparksql_ratio", "spark_jobs", "spark_stages", "peak_mb", "note"]
BASELINE_BACKENDS = ("duckdb", "sparksql")


def write_csv(results: list[RunResult], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in results:
            row = r.row()
            w.writerow({k: _csv_value(row.get(k)) for k in CSV_FIELDS})


def _csv_value(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else v


def _rate_text(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.1f}"
    return f"{v:.3g}"


def cell(r: RunResult) -> str:
    if r.status != "OK":
        return f"**{r.status}**" if r.status == "WRONG" else r.status.lower()
    if r.rate is None:
        return "-"
    text = _rate_text(r.rate)
    if r.backend != "duckdb" and r.ratio is not None:
        text += f" (×{_ratio_text(r.ratio)})"
    if r.backend not in BASELINE_BACKENDS and r.sparksql_ratio is not None:
        text += f" (sql ×{_ratio_text(r.sparksql_ratio)})"
    if r.fraction < 0.999 and r.backend not in BASELINE_BACKENDS:
        text += f" [{100 * r.fraction:.0f}%]"
    return text


def _ratio_text(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def markdown_table(results: list[RunResult]) -> str:
    """One row per query x backend x strategy; one column per batch size."""
    sizes = sorted({r.batch_size for r in results if r.batch_size})
    rows: "OrderedDict[tuple, dict]" = OrderedDict()
    for r in results:
        key = (r.query, r.backend, r.strategy)
        rows.setdefault(key, {})[r.batch_size] = r
    head = "| query | backend | strategy | " + " | ".join(f"batch {s}" for s in sizes) + " |"
    lines = [head, "|" + "---|" * (3 + len(sizes))]
    for (q, be, st), by_size in rows.items():
        label = f"{be} (baseline)" if be in BASELINE_BACKENDS else f"{be}"
        cells = [cell(by_size[s]) if s in by_size else "" for s in sizes]
        lines.append(f"| {q} | {label} | {st} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def cost_table(results: list[RunResult]) -> str:
    """Compile time and peak resident-set growth per query x backend x strategy (worst over batch sizes;
    runs share one process, so a run reusing memory an earlier one freed shows little growth)."""
    rows: "OrderedDict[tuple, list]" = OrderedDict()
    for r in results:
        rows.setdefault((r.query, r.backend, r.strategy), []).append(r)
    lines = ["| query | backend | strategy | compile (s) | peak RSS growth (MB) | status |", "|---|---|---|---|---|---|"]
    for (q, be, st), rs in rows.items():
        comp = [r.compile_s for r in rs if r.compile_s is not None]
        mem = [r.peak_mb for r in rs if r.peak_mb is not None]
        statuses = sorted({r.status for r in rs})
        comp_text = f"{max(comp):.2f}" if comp else "-"
        mem_text = f"{max(mem):.1f}" if mem else "-"
        lines.append(f"| {q} | {be} | {st} | {comp_text} | {mem_text} | {', '.join(statuses)} |")
    return "\n".join(lines) + "\n"


def python_share_table(results: list[RunResult]) -> str:
    """Per query x backend x batch size: the share of maintenance time spent in Python
    (apply time minus native time); llvm runs only (the other engines are Python throughout)."""
    rows = [r for r in results if r.python_share is not None and r.status == "OK"]
    if not rows:
        return ""
    lines = ["| query | backend | strategy | batch size | maintenance (s) | native (s) | Python share |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.query} | {r.backend} | {r.strategy} | {r.batch_size} | {r.maint_s:.3f} | "
                     f"{r.native_s:.3f} | {100 * r.python_share:.1f} % |")
    return "\n".join(lines) + "\n"


def spark_table(results: list[RunResult]) -> str:
    """Spark jobs and stages per batch (toaster's spark backend and the Spark SQL baseline)."""
    rows = [r for r in results if r.spark_jobs is not None and r.status == "OK"]
    if not rows:
        return ""
    lines = ["| query | backend | strategy | batch size | Spark jobs / batch | Spark stages / batch |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.query} | {r.backend} | {r.strategy} | {r.batch_size} | {r.spark_jobs:.2f} | "
                     f"{r.spark_stages:.2f} |")
    return "\n".join(lines) + "\n"


def full_report(results: list[RunResult], info: dict, command: str = "") -> str:
    out = ["# toaster benchmark", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    for ds, d in info.get("datasets", {}).items():
        p = ", ".join(f"{k}={v}" for k, v in d["params"].items() if k != "format")
        rate = f"{d['parse_rate']:,.0f} events/s" if d.get("parse_rate") else "-"
        out.append(f"* {ds}: {d['events']:,} events ({p}); parsing {d['parse_s']:.2f} s ({rate})")
    out += ["", "Rates in events per second of maintenance (batch 1 = single-tuple triggers = view "
            "refreshes/s); (×r) = ratio to DuckDB re-evaluating the query after every batch of the same "
            "stream; (sql ×r) = ratio to Spark SQL re-evaluating it (ingest + query + collect per batch); [p%] = share of the stream processed within the time limit; **WRONG** = final views "
            "differ from DuckDB.", "", markdown_table(results), "", cost_table(results), "",
            python_share_table(results), "", spark_table(results)]
    problems = [r for r in results if r.status not in ("OK", "SKIPPED")]
    if problems:
        out += ["", "Notes:"]
        out += [f"* {r.query} {r.backend}/{r.strategy} batch {r.batch_size}: {r.status}: {r.note}" for r in problems]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ plots
def _series_label(r: RunResult) -> str:
    return f"{r.backend} re-eval" if r.backend in BASELINE_BACKENDS else f"{r.backend}/{r.strategy}"


def _colors(results: list[RunResult]) -> dict:
    """One color per backend/strategy across every figure and panel."""
    labels = list(OrderedDict.fromkeys(_series_label(r) for r in results))
    return {s: f"C{i % 10}" for i, s in enumerate(labels)}


def plot_rates(results: list[RunResult], out_dir: str) -> list[str]:
    """One PNG per batch size: per query, a bar per backend/strategy (log-scale rate)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    colors = _colors(results)
    for bs in sorted({r.batch_size for r in results if r.batch_size}):
        rs = [r for r in results if r.batch_size == bs and r.status == "OK" and r.rate]
        if not rs:
            continue
        queries = list(OrderedDict.fromkeys(r.query for r in rs))
        series = list(OrderedDict.fromkeys(_series_label(r) for r in rs))
        width = 0.8 / len(series)
        fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(queries) + 2), 4.5))
        for k, s in enumerate(series):
            xs, ys = [], []
            for i, q in enumerate(queries):
                hit = [r.rate for r in rs if r.query == q and _series_label(r) == s]
                if hit:
                    xs.append(i + (k - (len(series) - 1) / 2) * width)
                    ys.append(hit[0])
            ax.bar(xs, ys, width=width, label=s, color=colors[s])
        ax.set_yscale("log")
        ax.set_xticks(range(len(queries)), queries, rotation=30, ha="right")
        ax.set_ylabel("events / s" + (" (view refreshes / s)" if bs == 1 else ""))
        ax.set_title(f"refresh rate, batch size {bs}")
        ax.legend(fontsize="small")
        ax.grid(axis="y", which="both", alpha=0.3)
        fig.tight_layout()
        p = os.path.join(out_dir, f"rates_bs{bs}.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def plot_sweep(results: list[RunResult], path: str) -> str | None:
    """Rate against batch size, one panel per query, one line per backend/strategy (Hot Dog Fig. 7)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rs = [r for r in results if r.status == "OK" and r.rate and r.batch_size]
    if not rs:
        return None
    queries = list(OrderedDict.fromkeys(r.query for r in rs))
    colors = _colors(results)
    cols = min(3, len(queries))
    nrows = (len(queries) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    for i, q in enumerate(queries):
        ax = axes[i // cols][i % cols]
        for s in OrderedDict.fromkeys(_series_label(r) for r in rs if r.query == q):
            pts = sorted((r.batch_size, r.rate) for r in rs if r.query == q and _series_label(r) == s)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s, color=colors[s])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(q)
        ax.set_xlabel("batch size")
        ax.set_ylabel("events / s")
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize="x-small")
    for j in range(len(queries), nrows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
