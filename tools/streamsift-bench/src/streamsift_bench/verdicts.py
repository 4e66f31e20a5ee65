"""A bench run's verdicts: streamsift's rates as ratios of the baselines', and the issue's
targets with what the run measured.

Pure functions of the results dict. A run whose counts did not match its truth has no rates,
so it contributes no number to any ratio or target.
"""

from __future__ import annotations

from typing import Any

RATIOS = (
    ("dedup", "raw", "dedup / raw consumer"),
    ("dedup", "quix", "dedup / quixstreams"),
    ("dedup", "ch_final", "dedup / ClickHouse-side dedup (ingest rate)"),
    ("ingest", "raw", "ingest / raw consumer"),
    ("ingest", "raw_ingest", "ingest / raw consumer without dedup"),
    ("dedup-join", "raw_join", "dedup-join / raw consumer with an in-memory join"),
    ("dedup-large", "raw-large", "large drain: dedup / raw consumer"),
    ("dedup-large", "quix-large", "large drain: dedup / quixstreams"),
    ("dedup@2-workers", "dedup@1-worker", "dedup on a cluster: 2 executor cores / 1"),
)


def _rate(results: dict, name: str, key: str = "processing_rate") -> float | None:
    run = results.get("drain", {}).get(name) or {}
    return (run.get("rates") or {}).get(key)


def ratios(results: dict) -> list[dict[str, Any]]:
    out = []
    for ours, base, label in RATIOS:
        if ours not in results.get("drain", {}) or base not in results.get("drain", {}):
            continue
        row: dict[str, Any] = {"ours": ours, "baseline": base, "label": label}
        for key in ("processing_rate", "wall_rate"):
            a, b = _rate(results, ours, key), _rate(results, base, key)
            row[key] = round(a / b, 3) if a and b else None
        a, b = _rate(results, ours, "steady_rate"), _rate(results, base, "processing_rate")
        row["steady_rate"] = round(a / b, 3) if a and b else None
        out.append(row)
    return out


def _latency_p95(results: dict, scenario: str, rate: int) -> float | None:
    for step in (results.get("live", {}).get(scenario) or {}).get("steps", []):
        if step["phase"] == "latency" and step["rate"] == rate and "latency" in step:
            return step["latency"]["p95"]
    return None


def targets(results: dict) -> list[dict[str, Any]]:
    """The issue's targets with what this run measured (None: not measured here)."""
    all_ratios = ratios(results)
    ratio = {(r["ours"], r["baseline"]): r["processing_rate"] for r in all_ratios}
    steady = {(r["ours"], r["baseline"]): r["steady_rate"] for r in all_ratios}
    live = results.get("live", {}).get("dedup") or {}
    rows = [
        ("dedup pipeline sustained", ">= 50,000 events/s", live.get("sustained_rate"), 50_000),
        ("dedup vs raw consumer (processing rate)", ">= 0.75x", ratio.get(("dedup", "raw")), 0.75),
        ("dedup vs quixstreams (processing rate)", ">= 2.5x", ratio.get(("dedup", "quix")), 2.5),
        ("ingest vs raw consumer (processing rate)", ">= 0.6x", ratio.get(("ingest", "raw")), 0.6),
    ]
    out = [
        {
            "target": name,
            "goal": goal,
            "measured": value,
            "met": None if value is None else value >= threshold,
        }
        for name, goal, value, threshold in rows
    ]
    for t, pair in zip(
        out[1:4], [("dedup", "raw"), ("dedup", "quix"), ("ingest", "raw")], strict=True
    ):
        if steady.get(pair) is not None:
            t["steady"] = steady[pair]  # streamsift after its first micro-batch
    p95 = _latency_p95(results, "dedup", 5_000)
    out.append(
        {
            "target": "dedup p95 end-to-end latency at 5,000 events/s",
            "goal": "<= 1.5 s",
            "measured": p95,
            "met": None if p95 is None else p95 <= 1.5,
        }
    )
    join_rate = _rate(results, "dedup-join")
    join_target: dict[str, Any] = {
        "target": "dedup+join (processing rate, left events)",
        "goal": ">= 20,000 left events/s",
        "measured": None if join_rate is None else round(join_rate),
        "met": None if join_rate is None else join_rate >= 20_000,
    }
    if "dedup-join" not in results.get("drain", {}):
        join_target["note"] = "not measured: run `streamsift bench --scenario dedup-join`"
    elif join_rate is None:
        join_target["note"] = "no figure: the dedup-join run FAILED its check"
    join_steady = _rate(results, "dedup-join", "steady_rate")
    if join_steady is not None:
        join_target["steady_rate"] = join_steady
    out.append(join_target)
    wall = {(r["ours"], r["baseline"]): r["wall_rate"] for r in all_ratios}
    if "dedup-large" in results.get("drain", {}):
        large_wall = wall.get(("dedup-large", "quix-large"))
        out.append(
            {
                "target": "large drain: dedup vs quixstreams (wall rate, start-up included)",
                "goal": "> 1.0x",
                "measured": large_wall,
                "met": None if large_wall is None else large_wall > 1.0,
                "note": "no figure: a large-drain run FAILED or quixstreams did not run",
            }
        )
    mem = (results.get("live", {}).get("soak") or {}).get("memory") or {}
    big_enough = (
        (mem.get("distinct_keys") or 0) >= 5_000_000
        and (mem.get("seconds") or 0) >= 590
        and mem.get("window") == "7d"
    )
    out.append(
        {
            "target": "memory flat over a 10-minute 7-day-window run with >= 5M keys",
            "goal": "+-10%",
            "measured": mem.get("change"),
            "shown": (
                f"{mem['change']:+.1%} RSS, {mem.get('distinct_keys') or 0:,} keys, "
                f"{mem.get('seconds') or 0:,.0f} s, {mem.get('window')} window"
                if mem.get("change") is not None
                else None
            ),
            "met": mem.get("flat") if big_enough else None,
            "note": "run `streamsift bench --scenario soak`"
            if not mem
            else "the soak was smaller than the target's (keys, minutes or window)",
        }
    )
    return out


def all_exact(results: dict) -> bool:
    runs = list(results.get("drain", {}).values()) + list(results.get("live", {}).values())
    return bool(runs) and all(r.get("exact") for r in runs)
