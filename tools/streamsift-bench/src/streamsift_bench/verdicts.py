"""A bench run's verdicts: streamsift's rates as ratios of the baselines', and the issue's
targets with what the run measured.

Pure functions of the results dict. A run whose counts did not match its truth has no rates,
so it contributes no number to any ratio or target.
"""

from __future__ import annotations

from typing import Any

RATIOS = (
    ("dedup", "raw_vec", "dedup / vectorised raw consumer"),
    ("dedup", "nospark", "dedup / streamsift without Spark (what Spark costs)"),
    ("nospark", "raw_vec", "streamsift without Spark / vectorised raw consumer"),
    # --clickhouse server: streamsift's server mode against raw_vec into the same endpoint, and
    # what the endpoint costs raw_vec (its HTTP inserts against chdb in its own process)
    ("dedup", "raw_vec_server", "server mode: dedup / raw_vec into the same endpoint"),
    ("raw_vec_server", "raw_vec", "raw_vec into the endpoint / into embedded chdb"),
    ("dedup", "raw_naive", "dedup / naive raw consumer"),
    ("dedup", "quix", "dedup / quixstreams"),
    ("dedup", "ch_final", "dedup / ClickHouse-side dedup (ingest rate)"),
    ("ingest", "raw_vec_ingest", "ingest / vectorised raw consumer without dedup"),
    ("ingest", "nospark_ingest", "ingest / streamsift without Spark, no dedup"),
    ("ingest", "raw_naive_ingest", "ingest / naive raw consumer without dedup"),
    ("dedup-join", "raw_join", "dedup-join / raw consumer with an in-memory join"),
    ("dedup-large", "raw_vec-large", "large drain: dedup / vectorised raw consumer"),
    ("dedup-large", "nospark-large", "large drain: dedup / streamsift without Spark"),
    ("nospark-large", "raw_vec-large", "large drain: without Spark / vectorised raw consumer"),
    ("dedup-large", "raw_naive-large", "large drain: dedup / naive raw consumer"),
    ("dedup-large", "quix-large", "large drain: dedup / quixstreams"),
    ("dedup@2-workers", "dedup@1-worker", "dedup on a cluster: 2 executor cores / 1"),
)
RATIO_KEYS = ("processing_rate", "wall_rate", "steady_rate")
# A ratio whose pairs disagree by more than this (max - min over the median) is unstable:
# reported with its spread, never counted as a target met.
UNSTABLE_SPREAD = 0.20


def pair_ratio(ours: list[float | None], base: list[float | None]) -> dict[str, Any]:
    """A ratio from paired rounds (ours[i] / base[i]): the median, its spread and stability.

    Any missing figure (a failed round, a rate not measured) leaves the ratio without a value.
    One pair gives a value without a spread (stability unknown).
    """
    if not ours or len(ours) != len(base) or any(not v for v in (*ours, *base)):
        return {"value": None, "pairs": [], "spread": None, "unstable": None}
    pairs = [round(a / b, 3) for a, b in zip(ours, base, strict=True)]  # type: ignore[operator]
    value = _median(pairs)
    if len(pairs) < 2:
        return {"value": value, "pairs": pairs, "spread": None, "unstable": None}
    spread = round((max(pairs) - min(pairs)) / value, 3)
    return {"value": value, "pairs": pairs, "spread": spread, "unstable": spread > UNSTABLE_SPREAD}


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return round((ordered[mid - 1] + ordered[mid]) / 2, 3)


def _rounds(run: dict[str, Any], key: str) -> list[float | None]:
    """A run's figure per round (one round: its only figure); None where it has none."""
    if not run.get("exact"):
        return [None]
    if run.get("rounds"):
        return [r.get(key) for r in run["rounds"]]
    return [(run.get("rates") or {}).get(key)]


def _rate(results: dict, name: str, key: str = "processing_rate") -> float | None:
    run = results.get("drain", {}).get(name) or {}
    return (run.get("rates") or {}).get(key)


def ratios(results: dict) -> list[dict[str, Any]]:
    """streamsift against each baseline of this run: processing, wall and steady ratios, each
    the median of its round-by-round pairs, with the pairs' spread; `unstable` when the
    processing or the wall ratio's pairs disagree by more than UNSTABLE_SPREAD."""
    drain = results.get("drain", {})
    out = []
    for ours, base, label in RATIOS:
        if ours not in drain or base not in drain:
            continue
        row: dict[str, Any] = {"ours": ours, "baseline": base, "label": label, "spread": {}}
        unstable = []
        for key in RATIO_KEYS:
            r = pair_ratio(_rounds(drain[ours], key), _rounds(drain[base], key))
            row[key] = r["value"]
            row["spread"][key] = r["spread"]
            row.setdefault("pairs", {})[key] = r["pairs"]
            if key != "steady_rate":
                unstable.append(r["unstable"])
        row["unstable"] = True if any(unstable) else (None if None in unstable else False)
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
    by_pair = {(r["ours"], r["baseline"]): r for r in all_ratios}
    live = results.get("live", {}).get("dedup") or {}
    rows = [
        ("dedup pipeline sustained", ">= 60,000 events/s", live.get("sustained_rate"), 60_000),
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
    # issue 30's targets against the vectorised ceiling: wall ratios, processing beside them
    for ours, base, name, goal in (
        ("dedup", "raw_vec", "dedup drain vs raw_vec (wall, start-up included)", 0.5),
        ("ingest", "raw_vec_ingest", "ingest drain vs raw_vec without dedup (wall)", 0.7),
    ):
        out.append(ratio_target(by_pair.get((ours, base)), name, goal))
    p95 = _latency_p95(results, "dedup", 5_000)
    out.append(
        {
            "target": "dedup p95 end-to-end latency at 5,000 events/s",
            "goal": "<= 1.0 s",
            "measured": p95,
            "met": None if p95 is None else p95 <= 1.0,
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
    out.append(_join_first_batch(results))
    wall = {pair: r["wall_rate"] for pair, r in by_pair.items()}
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
    if "dedup-large" in results.get("drain", {}):
        for ours, base, name, goal in (
            ("dedup-large", "raw_vec-large", "large drain: dedup vs raw_vec (wall)", 0.6),
            ("nospark-large", "raw_vec-large", "large drain: without Spark vs raw_vec (wall)", 0.9),
        ):
            out.append(ratio_target(by_pair.get((ours, base)), name, goal))
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


def _join_first_batch(results: dict) -> dict[str, Any]:
    """The dedup+join drain's first micro-batch (the planners, the state stores' creation and
    the right side's whole backlog): issue 30 asks for at most 1.5 s."""
    run = results.get("drain", {}).get("dedup-join") or {}
    first = run.get("first_batch") or {}
    seconds = first.get("seconds") if run.get("exact") else None
    target: dict[str, Any] = {
        "target": "dedup+join: the first micro-batch",
        "goal": "<= 1.5 s",
        "measured": seconds,
        "met": None if seconds is None else seconds <= 1.5,
    }
    if first.get("rows") is not None:
        target["rows"] = first["rows"]
    return target


def ratio_target(row: dict[str, Any] | None, name: str, goal: float) -> dict[str, Any]:
    """A target on a wall ratio: met only when measured, at or above `goal`, and stable."""
    target: dict[str, Any] = {"target": name, "goal": f">= {goal}x", "measured": None}
    if row is None or row.get("wall_rate") is None:
        target.update(met=None, note="not measured in this run (or a run FAILED)")
        return target
    target["measured"] = row["wall_rate"]
    target["processing"] = row.get("processing_rate")
    target["spread"] = row["spread"].get("wall_rate")
    if row.get("unstable"):
        target.update(met=None, note="unstable: its pairs disagree by more than 20%")
    else:
        target["met"] = row["wall_rate"] >= goal
    return target


def all_exact(results: dict) -> bool:
    runs = list(results.get("drain", {}).values()) + list(results.get("live", {}).values())
    return bool(runs) and all(r.get("exact") for r in runs)
