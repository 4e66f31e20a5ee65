"""What `streamsift bench` computes from its runs: drain rates, the lag verdict of a live step
and the highest sustained rate, memory flatness, Spark's batch phases per step, latency
percentiles, and the machine the numbers were taken on. Pure functions of the runs' records
(no processes are started here but `java -version`)."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamsift_bench.common import DRAIN_GRACE_S, LAG_BOUND_S, LAG_GROWTH_S, interpolate


def drain_rates(kind: str, result: dict[str, Any]) -> dict[str, Any]:
    """Events per second over the processing time and over the wall time (start-up included),
    and the steady rate: after the first batch, for every run alike.

    streamsift's processing time is Spark's own account of its micro-batches (the sum of
    batch durations); a baseline's is from its first message to its last insert. The steady
    rate leaves out the first batch: streamsift's first micro-batch (which pays for starting
    the Python workers), a baseline's reading up to the end of its first insert.
    """
    read = result.get("events") or result.get("read") or 0
    busy = result.get("busy_seconds") if kind == "streamsift" else result.get("processing_seconds")
    wall = result.get("wall_seconds")
    ok = bool(result.get("exact"))
    steady = result.get("after_first_batch_rate")
    return {
        "processing_seconds": busy,
        "processing_rate": round(read / busy, 1) if ok and busy else None,
        "wall_rate": round(read / wall, 1) if ok and wall else None,
        "steady_rate": steady if ok else None,
        "startup_seconds": result.get("startup_seconds"),
    }


RATE_KEYS = ("processing_rate", "wall_rate", "steady_rate", "startup_seconds")


def combine_rounds(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's repeats as one result: the first round's details, exact only if every round
    was, its rates the median over the rounds (None when a round failed), and each round's
    rates under `rounds` (the ratios pair them round by round, verdicts.ratios)."""
    if len(results) == 1:
        return results[0]
    out = dict(results[0])
    out["exact"] = all(r.get("exact") for r in results)
    per_round = [{"exact": bool(r.get("exact")), **(r.get("rates") or {})} for r in results]
    out["rounds"] = per_round
    rates = dict(results[0].get("rates") or {})
    for key in RATE_KEYS:
        values = [r.get(key) for r in per_round]
        rates[key] = median(values) if out["exact"] and all(v is not None for v in values) else None
    out["rates"] = rates
    return out


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return round((ordered[mid - 1] + ordered[mid]) / 2, 3)


def judge_step(
    phase: str,
    rate: int,
    report: dict[str, Any],
    produced: list[tuple[float, int]],
    processed: list[tuple[float, int]],
    drained: bool,
    drained_at: float,
) -> dict[str, Any]:
    """Lag over one step (produced - processed, as the pipeline reports it) and the verdict."""
    start, end = report["started_at"], report["ended_at"]
    lags = [
        (t, max(0, int(interpolate(produced, t) - done)))
        for t, done in processed
        if start <= t <= end + 0.5
    ]
    quarter = (end - start) / 4
    q2 = [lag for t, lag in lags if start + quarter <= t < start + 2 * quarter]
    q4 = [lag for t, lag in lags if t >= start + 3 * quarter]
    late = [lag for t, lag in lags if t >= start + 2 * quarter]
    max_lag = max((lag for _, lag in lags), default=0)
    achieved = report["achieved_rps"]
    generator_ok = achieved >= 0.95 * rate
    bounded = (
        max(late, default=0) <= rate * LAG_BOUND_S
        and max(q4, default=0) - max(q2, default=0) <= rate * LAG_GROWTH_S
    )
    return {
        "phase": phase,
        "rate": rate,
        "achieved_rps": achieved,
        "started_at": start,
        "ended_at": end,
        "events": report["acked"],
        "max_lag": max_lag,
        "max_lag_seconds": round(max_lag / rate, 2),
        "drained_within_grace": drained,
        "drain_seconds_after_step": round(drained_at - end, 2) if drained else None,
        "generator_kept_up": generator_ok,
        "sustained": bool(bounded and drained and generator_ok),
    }


def memory_flatness(
    samples: list[tuple[float, int, float]],
    step: dict[str, Any],
    role_samples: Sequence[tuple[float, dict[str, int]]] = (),
) -> dict:
    """RSS of the tree early in a long step against its end: does state stay off the heap?

    Early = the median over 20-30% of the step (after warm-up), end = the median over its
    last 10%; flat when they differ by at most 10%. The same per role (driver, JVM, Python
    workers) tells which process grows.
    """
    start, end = step["started_at"], step["ended_at"]
    span = end - start

    def median(values: list[int]) -> float | None:
        values = sorted(values)
        return values[len(values) // 2] / 2**20 if values else None

    def within(t: float, a: float, b: float) -> bool:
        return start + a * span <= t <= start + b * span

    def change(early: float | None, late: float | None) -> float | None:
        return round((late - early) / early, 4) if early and late else None

    early = median([r for t, r, _c in samples if within(t, 0.2, 0.3)])
    late = median([r for t, r, _c in samples if within(t, 0.9, 1.0)])
    by_role = {}
    for role in sorted({role for _t, roles in role_samples for role in roles}):
        e = median([roles.get(role, 0) for t, roles in role_samples if within(t, 0.2, 0.3)])
        z = median([roles.get(role, 0) for t, roles in role_samples if within(t, 0.9, 1.0)])
        by_role[role] = {
            "early_rss_mb": round(e, 1) if e is not None else None,
            "end_rss_mb": round(z, 1) if z is not None else None,
            "change": change(e, z),
        }
    total_change = change(early, late)
    return {
        "early_rss_mb": round(early, 1) if early else None,
        "end_rss_mb": round(late, 1) if late else None,
        "change": total_change,
        "flat": None if total_change is None else abs(total_change) <= 0.10,
        "by_role": by_role,
    }


def attach_batch_phases(steps: list[dict[str, Any]], batch_log: list[dict[str, Any]]) -> None:
    """Per step: Spark's micro-batches that started during it (or until it drained)."""
    from datetime import datetime

    def started(batch: dict[str, Any]) -> float:
        return datetime.fromisoformat(batch["timestamp"].replace("Z", "+00:00")).timestamp()

    for step in steps:
        until = step["ended_at"] + (step["drain_seconds_after_step"] or DRAIN_GRACE_S)
        batches = [
            b for b in batch_log if b.get("timestamp") and step["started_at"] <= started(b) <= until
        ]
        step["spark"] = {
            "batches": len(batches),
            "latest_offset_s": sum(b["phases_ms"].get("latestOffset", 0) for b in batches) / 1000,
            "add_batch_s": sum(b["phases_ms"].get("addBatch", 0) for b in batches) / 1000,
            "batch_s": sum(b["ms"] for b in batches) / 1000,
        }


def sustained_rate(steps: list[dict[str, Any]]) -> int | None:
    """The highest step rate at which this and every lower-rate step kept the lag bounded.

    Fixed-rate (latency) steps count as well as ramp steps: a pipeline that falls behind at
    5,000 events/s has not sustained 10,000 even if a later burst went through.
    """
    best = None
    for step in sorted(steps, key=lambda s: s["rate"]):
        if not step["sustained"]:
            break
        best = step["rate"]
    return best


def ramp_limit(steps: list[dict[str, Any]]) -> str | None:
    """Why the ramp stopped where it did, in words (None without live steps)."""
    failed = sorted((s for s in steps if not s["sustained"]), key=lambda s: s["rate"])
    if not steps:
        return None
    if not failed:
        return "every step sustained (raise --ramp to probe further)"
    first = failed[0]
    if not first["generator_kept_up"]:
        reached = f"{first['achieved_rps']:,.0f}/s of {first['rate']:,}/s"
        return f"the load generator reached only {reached}"
    return f"lag grew at {first['rate']:,}/s ({first['phase']} step)"


def attach_latency(result: dict[str, Any], path: Path) -> None:
    """Per fixed-rate step: latency percentiles of the rows produced during that step."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    produced = table.column("produced_at_ms").to_numpy()
    latency = (table.column("ingested_ms").to_numpy() - produced) / 1000.0
    for step in result["steps"]:
        if step["phase"] != "latency":
            continue
        mask = (produced >= step["started_at"] * 1000) & (produced <= step["ended_at"] * 1000)
        values = latency[mask]
        if not len(values):
            continue
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        step["latency"] = {
            "rows": int(len(values)),
            "p50": round(float(p50), 3),
            "p95": round(float(p95), 3),
            "p99": round(float(p99), 3),
            "max": round(float(values.max()), 3),
            "min": round(float(values.min()), 3),
        }
        step["latency_cdf"] = _cdf(values)


def _cdf(values: Any, points: int = 200) -> list[tuple[float, float]]:
    import numpy as np

    qs = np.linspace(0, 100, points)
    return [
        (round(float(v), 4), round(float(q) / 100, 4))
        for v, q in zip(np.percentile(values, qs), qs, strict=True)
    ]


def machine_info() -> dict[str, Any]:
    """Cores, memory, CPU model, Python/Java and library versions: what the numbers ran on."""
    import psutil

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for mod in ("pyspark", "confluent_kafka", "chdb", "pyarrow", "clickhouse_connect"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", None) or str(
                getattr(m, "version", lambda: "")()
            )
        except ImportError:
            versions[mod] = None
    java = subprocess.run(["java", "-version"], capture_output=True, text=True)
    return {
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": (java.stderr or java.stdout).splitlines()[0] if java.returncode == 0 else None,
        "versions": versions,
        "load_average_start": load_average(),
    }


def load_average() -> list[float]:
    """The 1/5/15-minute load averages ([] where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []
