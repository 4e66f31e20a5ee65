"""PNG plots of a bench run (matplotlib, Agg backend: no display needed).

- `drain-rates.png`: events/s of every backlog drain, processing and wall;
- `throughput-<scenario>.png`: input and processed events/s over a live run, with the lag;
- `latency-cdf.png`: end-to-end latency distribution per fixed input rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamsift_bench.common import LABELS, interpolate


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _thousands() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}")


def make_plots(results: dict, out: Path) -> list[str]:
    """Write every plot the results allow; returns their file names (relative to out)."""
    names = []
    if any(
        (r.get("rates") or {}).get("processing_rate") for r in results.get("drain", {}).values()
    ):
        names.append(drain_plot(results, out / "drain-rates.png"))
    for scenario, live in results.get("live", {}).items():
        if live.get("series", {}).get("processed"):
            names.append(throughput_plot(scenario, live, out / f"throughput-{scenario}.png"))
    if any(
        "latency_cdf" in s
        for live in results.get("live", {}).values()
        for s in live.get("steps", [])
    ):
        names.append(latency_plot(results, out / "latency-cdf.png"))
    return names


def drain_plot(results: dict, path: Path) -> str:
    plt = _plt()
    runs = [(n, r) for n, r in results["drain"].items()]
    labels = [LABELS.get(n, n) + ("" if r.get("exact") else " (FAILED)") for n, r in runs]
    proc = [(r.get("rates") or {}).get("processing_rate") or 0 for _, r in runs]
    wall = [(r.get("rates") or {}).get("wall_rate") or 0 for _, r in runs]
    fig, ax = plt.subplots(figsize=(10, 0.7 * len(runs) + 1.6))
    y = range(len(runs))
    ax.barh([i + 0.2 for i in y], proc, height=0.4, label="processing rate", color="#2b6cb0")
    ax.barh(
        [i - 0.2 for i in y],
        wall,
        height=0.4,
        label="wall rate (start-up included)",
        color="#a0aec0",
    )
    for i, (p, w) in enumerate(zip(proc, wall, strict=True)):
        ax.text(p, i + 0.2, f" {p:,.0f}", va="center", fontsize=9)
        ax.text(w, i - 0.2, f" {w:,.0f}", va="center", fontsize=9, color="#4a5568")
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xlabel("events / s")
    ax.xaxis.set_major_formatter(_thousands())
    sizes = [results.get(k, {}).get("produced") for k in ("dataset", "dataset_large")]
    ev = " and ".join(f"{n:,}" for n in sizes if n)
    ax.set_title(  # two lines: one is wider than the axes beside long run names
        f"Backlog drain of {ev} events\n(~1 KB, 20% re-sends), {results['machine']['cores']} cores"
    )
    ax.set_xlim(0, max(proc + wall + [1]) * 1.18)
    ax.legend(loc="lower right", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _rate_series(
    points: list[tuple[float, float]], t0: float, bin_s: float = 1.0
) -> tuple[list, list]:
    """Events/s per time bin from a cumulative count series."""
    if len(points) < 2:
        return [], []
    xs, ys = [], []
    end = points[-1][0]
    t = points[0][0]
    prev_v = _at(points, t)
    while t < end:
        nxt = t + bin_s
        v = _at(points, nxt)
        xs.append(nxt - t0)
        ys.append((v - prev_v) / bin_s)
        prev_v, t = v, nxt
    return xs, ys


def _at(points: list[tuple[float, float]], t: float) -> float:
    return interpolate(points, t)


def throughput_plot(scenario: str, live: dict, path: Path) -> str:
    plt = _plt()
    produced = [(t, v) for t, v in live["series"]["produced"]]
    progress = [(t, c) for t, c in live["series"]["processed"]]
    t0 = min(produced[0][0], progress[0][0]) if produced else progress[0][0]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, height_ratios=[3, 2])
    xi, yi = _rate_series(produced, t0)
    xo, yo = _rate_series(progress, t0, bin_s=2.0)
    ax1.step(xi, yi, where="post", label="input (acked by Kafka)", color="#a0aec0")
    ax1.step(
        xo,
        yo,
        where="post",
        label="processed by the pipeline (2 s bins)",
        color="#2b6cb0",
    )
    ax1.set_ylabel("events / s")
    ax1.grid(alpha=0.3)
    steps = live.get("steps", [])
    if steps:
        warm = steps[0]["started_at"] - t0
        for ax in (ax1, ax2):
            ax.axvspan(0, warm, color="#edf2f7", alpha=0.8, lw=0)
        ax2.text(
            warm / 2,
            0.9,
            "Spark start-up +\nwarm-up events",
            ha="center",
            va="top",
            fontsize=8,
            transform=ax2.get_xaxis_transform(),
        )
    for step in steps:
        a, b = step["started_at"] - t0, step["ended_at"] - t0
        color = "#c6f6d5" if step["sustained"] else "#fed7d7"
        ax1.axvspan(a, b, color=color, alpha=0.35, lw=0)
        ax1.text(
            (a + b) / 2,
            ax1.get_ylim()[1] * 0.97,
            f"{step['rate'] / 1000:g}k",
            ha="center",
            va="top",
            fontsize=8,
        )
    ax1.legend(loc="upper left", fontsize=9)
    ax1.set_title(
        f"Live run, {LABELS.get(scenario, scenario)}: stepped input rate (green = sustained)"
    )
    lag_t = [t - t0 for t, _ in progress]
    lag = [max(0.0, _at(produced, t) - r) for t, r in progress]
    ax2.fill_between(lag_t, lag, step="post", color="#f6ad55", alpha=0.6)
    ax2.set_ylabel("lag (events)")
    for ax in (ax1, ax2):
        ax.yaxis.set_major_formatter(_thousands())
    ax2.set_xlabel("seconds since start")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def latency_plot(results: dict, path: Path) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 5))
    styles = {"dedup": "-", "ingest": "--"}
    colors = ["#2b6cb0", "#38a169", "#dd6b20", "#805ad5", "#e53e3e"]
    for scenario, live in results.get("live", {}).items():
        steps = [s for s in live.get("steps", []) if "latency_cdf" in s]
        for i, step in enumerate(steps):
            xs = [p[0] for p in step["latency_cdf"]]
            ys = [p[1] for p in step["latency_cdf"]]
            lat = step["latency"]
            ax.plot(
                xs,
                ys,
                styles.get(scenario, ":"),
                color=colors[i % len(colors)],
                label=f"{scenario} @ {step['rate']:,}/s (p95 {lat['p95']:.2f} s)",
            )
    ax.axhline(0.95, color="#718096", lw=0.8, ls=":")
    ax.set_xlabel("end-to-end latency, s (produce -> row inserted in ClickHouse)")
    ax.set_ylabel("share of rows")
    ax.set_ylim(0, 1.01)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    ax.set_title("Latency CDF at fixed input rates")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
