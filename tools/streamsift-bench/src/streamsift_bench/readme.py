"""README figures from results.json, never typed in: `streamsift bench --readme README.md`.

The README holds its bench figures between two markers (BEGIN, END); this module writes that
block from a bench run's results.json: the run, whether every run was exact, and the headline
ratios with processing and wall side by side, their spread and stability, plus start-up. Text
outside the markers is left alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BEGIN = "<!-- streamsift-bench:begin (written by `streamsift bench --readme`) -->"
END = "<!-- streamsift-bench:end -->"
# the ratios the README shows, in this order (those the run measured)
HEADLINE = (
    ("dedup-large", "raw_vec-large"),
    ("nospark-large", "raw_vec-large"),
    ("dedup-large", "quix-large"),
    ("dedup", "raw_vec"),
    ("dedup", "nospark"),
    ("nospark", "raw_vec"),
    ("ingest", "raw_vec_ingest"),
    ("dedup", "quix"),
    ("dedup", "raw_vec_server"),
    ("raw_vec_server", "raw_vec"),
    ("dedup-join", "raw_join"),
)


class ReadmeError(ValueError):
    """The README has no bench block, or the results cannot be read."""


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}x"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def readme_block(results: dict[str, Any]) -> str:
    """The block's Markdown (markers included) for one results document."""
    by_pair = {(r["ours"], r["baseline"]): r for r in results.get("ratios", [])}
    opts = results.get("options", {})
    exact = "every run exact" if results.get("all_exact") else "**some runs FAILED**"
    lines = [
        BEGIN,
        f"From `{results.get('command', 'streamsift bench')}` at {results.get('started_at')} "
        f"({results.get('machine', {}).get('cores')} cores; {exact}; "
        f"{opts.get('pairs') or 1} alternating pair(s) per ratio):",
        "",
        "| streamsift / baseline | processing | wall (start-up included) | spread | |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for pair in HEADLINE:
        r = by_pair.get(pair)
        if r is None:
            continue
        spread = r.get("spread") or {}
        flag = {True: "**unstable**", False: "stable", None: ""}[r.get("unstable")]
        lines.append(
            f"| {r['label']} | {_x(r.get('processing_rate'))} | {_x(r.get('wall_rate'))} | "
            f"{_pct(spread.get('processing_rate'))} / {_pct(spread.get('wall_rate'))} | {flag} |"
        )
    startup = [
        f"{name} {(run.get('rates') or {}).get('startup_seconds'):.1f} s"
        for name, run in results.get("drain", {}).items()
        if run.get("exact") and (run.get("rates") or {}).get("startup_seconds") is not None
    ]
    if startup:
        lines += ["", "Start-up: " + ", ".join(startup) + "."]
    lines += _live_and_join(results)
    verdicts = results.get("targets", [])
    missed = [t["target"] for t in verdicts if t.get("met") is False]
    unsure = [t["target"] for t in verdicts if t.get("met") is None and t.get("measured")]
    if missed:
        lines += [
            "",
            "Targets missed in this run (causes in docs/benchmarks.md): " + "; ".join(missed) + ".",
        ]
    if unsure:
        lines += ["", "Not counted (unstable pairs): " + "; ".join(unsure) + "."]
    return "\n".join([*lines, END])


def _live_and_join(results: dict[str, Any]) -> list[str]:
    """The live dedup run's sustained rate and p95 latency, and the join's left events/s."""
    out = []
    live = (results.get("live") or {}).get("dedup") or {}
    if live.get("exact") and live.get("sustained_rate"):
        p95 = {
            s["rate"]: s["latency"]["p95"]
            for s in live.get("steps", [])
            if s.get("phase") == "latency" and "latency" in s
        }
        latency = ", ".join(f"{p:.2f} s at {r:,} events/s" for r, p in sorted(p95.items()))
        out.append(
            f"- Live dedup: {live['sustained_rate']:,} events/s sustained"
            + (f"; p95 end-to-end latency {latency}" if latency else "")
            + "."
        )
    join = (results.get("drain") or {}).get("dedup-join") or {}
    rates = join.get("rates") or {}
    if join.get("exact") and rates.get("processing_rate"):
        out.append(
            f"- Dedup + inner join: {rates['processing_rate']:,.0f} left events/s processing, "
            f"{rates.get('wall_rate') or 0:,.0f} wall."
        )
    return ["", *out] if out else []


def replace_block(text: str, block: str) -> str:
    """`text` with its bench block replaced by `block`."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ReadmeError(f"no bench block: add the lines {BEGIN!r} and {END!r} to the file")
    return text[:start] + block + text[end + len(END) :]


def update_readme(readme: Path, results_path: Path) -> bool:
    """Rewrite the README's block from `results_path`; whether the file changed."""
    try:
        results = json.loads(Path(results_path).read_text())
        text = Path(readme).read_text()
    except (OSError, json.JSONDecodeError) as exc:
        raise ReadmeError(str(exc)) from exc
    new = replace_block(text, readme_block(results))
    if new == text:
        return False
    Path(readme).write_text(new)
    return True
