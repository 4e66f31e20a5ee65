"""Writing a bench run's results: results.json (with the verdicts of verdicts.py), report.md
and the plots.

Every figure comes from the run's own measurements; a run whose counts did not match its
truth shows as FAILED, with no number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamsift_bench.common import (
    DRAIN_GRACE_S,
    LABELS,
    LAG_BOUND_S,
    LAG_GROWTH_S,
    write_json,
)
from streamsift_bench.resources import PARTIES
from streamsift_bench.verdicts import all_exact, ratios, targets


def finish(results: dict, out: Path, plots: bool = True) -> None:
    """Add ratios and targets; write results.json, report.md and (optionally) the plots."""
    out.mkdir(parents=True, exist_ok=True)
    results["ratios"] = ratios(results)
    results["targets"] = targets(results)
    results["all_exact"] = all_exact(results)
    images: list[str] = []
    if plots:
        from streamsift_bench.plots import make_plots

        images = make_plots(results, out)
    results["plots"] = images
    write_json(out / "results.json", results)
    (out / "report.md").write_text(markdown(results))


# ---------------------------------------------------------------------- markdown


def _n(v: Any, digits: int = 0) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return f"{v:,.{digits}f}"
    return str(v)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def markdown(results: dict) -> str:
    m = results["machine"]
    o = results["options"]
    ds = results.get("dataset", {})
    lines = [
        "# streamsift benchmark report",
        "",
        f"Run {results['started_at']} in {results.get('duration_seconds', 0):,.0f} s: "
        f"`{results.get('command', 'streamsift bench')}`",
        "",
        f"Machine: {m['cores']} cores ({m['cpu'] or 'unknown CPU'}), {m['memory_gb']} GB RAM, "
        f"Python {m['python']}, {m.get('java') or 'Java ?'}, PySpark "
        f"{m['versions'].get('pyspark')}, chdb {m['versions'].get('chdb')}. Load average "
        f"at start {m.get('load_average_start')}, at end {m.get('load_average_end')}.",
        "",
        "Everything runs on this machine: the bundled broker (tansu), the load generator, the "
        "pipeline and ClickHouse (chdb, embedded in each run's process) share its cores.",
        "",
    ]
    if o.get("clickhouse") == "server":
        lines += _server_mode(results.get("drain", {}))
    if o.get("state_store") == "memory":
        lines += [
            "Join state for the streamsift runs: on the JVM heap (`runtime.state_store: memory`).",
            "",
        ]
    if o.get("note"):
        lines += [f"Note: {o['note']}", ""]
    if ds:
        prod = ds.get("producer", {})
        lines += [
            f"Data: {ds.get('produced', 0):,} events of ~{o['payload_bytes']:,} bytes in "
            f"{o['partitions']} partitions, {ds.get('duplicates', 0):,} re-sends "
            f"({o['duplicates']:.0%}, each repeating one of the last {o['keys']:,} ids), "
            f"{ds.get('expected_unique', 0):,} distinct ids; loaded at "
            f"{_n(prod.get('achieved_rps'))} events/s.",
            "",
        ]
        join = ds.get("join")
        if join:
            spec = join.get("spec", {})
            lines += [
                f"Join data (dedup-join): the same events as the left side, and "
                f"{join['right_messages']:,} user profile events as the right side "
                f"({join['right_duplicates']:,} re-sends, {spec.get('unmatched', 0):.0%} of "
                "the 1,000 users never publish one), keyed by their own id, joined on the user "
                f"id with windows left {_n(spec.get('left_window_s'))} s / right "
                f"{_n(spec.get('right_window_s'))} s (a profile at tr joins an event at tl when "
                "tl - right <= tr <= tl + left); the reference expects "
                f"{join['expected_rows']:,} joined rows ({join['left_matched']:,} events with "
                f"a partner, {join['left_unmatched']:,} without).",
                "",
            ]
    verdict = "every run exact" if results.get("all_exact") else "SOME RUNS FAILED (see below)"
    lines += [f"**Correctness: {verdict}.**", ""]

    drain = results.get("drain", {})
    admits = (
        f"the drains admit {_n(o.get('drain_batch_rows'))} messages per micro-batch so there "
        "are several"
        if ds
        else "see the large drain below for its micro-batches"
    )
    if drain:
        lines += ["## Backlog drain", ""]
        lines += [
            "Processing rate: events / processing time (streamsift: the sum of Spark's "
            "micro-batch durations; baselines: first message to last insert). Steady rate: "
            "after the first batch, for every run: streamsift's micro-batches after the first, "
            f"which pays for starting Spark's Python workers ({admits}); a baseline's reading "
            "after its first insert finished. Wall rate: "
            "events / process lifetime, start-up included. First rows: process start to the "
            "first rows in ClickHouse (streamsift). RSS: peak of the whole process tree "
            "(driver + JVM + Python workers), summed; PSS: the same with pages shared by forked "
            "workers counted once (sampled every 2 s). CPU: the tree's user + system seconds, over the "
            "whole process and over the processing time only (start-up excluded). State: "
            "checkpoint + dedup state on disk (streamsift), RocksDB dir (quixstreams).",
            "",
        ]
        # steady rates for every run or for none: a run without one (a drain done in one
        # batch) hides the column for all, as a steady rate beside a whole-run rate would lean
        steady_all = all(
            (r.get("rates") or {}).get("steady_rate") is not None
            for r in drain.values()
            if r.get("exact")
        )
        if not steady_all:
            lines += [
                "Steady rates: not shown, as not every run had a batch after its first (a "
                "baseline's first batch ends with its first insert of ~50,000 rows).",
                "",
            ]
        rows = []
        for name, r in drain.items():
            res = r.get("resources") or {}
            rates = r.get("rates") or {}
            state = r.get("state_bytes")
            rows.append(
                [
                    LABELS.get(name, name),
                    "exact" if r.get("exact") else "**FAILED**",
                    f"{_n(r.get('rows'))} / {_n(r.get('expected_rows'))}",
                    _n(rates.get("processing_rate")),
                    _n(rates.get("steady_rate") if steady_all else None),
                    _n(rates.get("wall_rate")),
                    _n(rates.get("processing_seconds"), 1),
                    _n(r.get("wall_seconds"), 1),
                    _n(r.get("first_rows_seconds"), 1),
                    f"{_n(res.get('peak_rss_mb'))} / {_n(res.get('peak_pss_mb'))}",
                    f"{_n(res.get('cpu_seconds'), 1)} / {_n(res.get('processing_cpu_seconds'), 1)}",
                    f"{_n(res.get('cpu_seconds_per_million'))} / "
                    f"{_n(res.get('processing_cpu_seconds_per_million'))}",
                    _n(state / 2**20 if state else state, 1),
                ]
            )
        lines += _table(
            [
                "run",
                "check",
                "rows / expected",
                "events/s (processing)",
                "events/s (steady)",
                "events/s (wall)",
                "processing s",
                "wall s",
                "first rows s",
                "peak RSS / PSS MB",
                "CPU s (all / processing)",
                "CPU s per M events (all / processing)",
                "state MB",
            ],
            rows,
        )
        failed = [(n, r) for n, r in drain.items() if not r.get("exact")]
        for name, r in failed:
            lines += [f"- {name} failed: {r.get('error') or _mismatch(r)}", ""]
        if results.get("dataset_large"):
            lines += _large_section(
                results["dataset_large"],
                drain.get("dedup-large") or {},
                o.get("max_rows_per_batch"),
            )
        if "dedup-join" in drain:
            lines += _join_section(drain["dedup-join"], o, drain.get("raw_join"))
        lines += _startup_line(drain)
        if results.get("ratios"):
            lines += _ratios_section(results["ratios"], o.get("pairs") or 1)
        cost = (drain.get("ch_final") or {}).get("read_cost")
        if cost:
            lines += [
                "### ClickHouse-side dedup: the read-time cost",
                "",
                f"`{cost['query']}` over the ReplacingMergeTree with FINAL took "
                f"{cost['final_seconds'] * 1000:,.1f} ms against {cost['deduped_table_seconds'] * 1000:,.1f} ms "
                f"on a table holding the deduplicated rows ({_n(cost['final_over_deduped'], 2)}x, "
                f"median of 5, {cost['active_parts']} active parts). Without FINAL the same "
                f"table shows {cost['rows_without_final']:,} rows instead of "
                f"{drain['ch_final'].get('expected_rows', 0):,}: every reader must pay FINAL "
                "(or wait for merges that may never come).",
                "",
            ]
    for scenario, live in results.get("live", {}).items():
        lines += _live_section(scenario, live, o.get("max_delay") or "1s")
    lines += ["## Targets", ""]
    lines += _table(
        ["target", "goal", "measured", "met"],
        [
            [
                t["target"],
                t["goal"],
                (t.get("shown") or _n(t["measured"], 2 if isinstance(t["measured"], float) else 0))
                + (f" (processing {_n(t['processing'], 2)})" if "processing" in t else "")
                + (f" (spread {_spread(t['spread'])})" if t.get("spread") is not None else "")
                + (
                    f" (steady {t['steady_rate']:,.0f})" if t.get("steady_rate") is not None else ""
                ),
                {True: "yes", False: "**no**", None: t.get("note", "–")}[t["met"]],
            ]
            for t in results.get("targets", [])
        ],
    )
    if results.get("plots"):
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in results["plots"]] + [""]
    return "\n".join(lines)


def _server_mode(drain: dict) -> list[str]:
    """Where the runs of a `--clickhouse server` bench write, and how to read its ratios."""
    lines = [
        "ClickHouse for the streamsift runs: a chdb-backed ClickHouse HTTP endpoint that each "
        "run starts as a separate process (counted in the run's process tree); streamsift "
        "inserts from Spark's executors as against a ClickHouse server. The baselines "
        "insert into chdb in their own process"
        + (
            ", but for `raw_vec_server`: raw_vec starting the same endpoint and inserting "
            "into it over HTTP with streamsift's ClickHouse client. Server mode / embedded = "
            "(dedup / raw_vec_server) x (raw_vec_server / raw_vec) / (embedded dedup / "
            "raw_vec): the second factor is the endpoint's cost to any client on these "
            "cores, the first what streamsift's server mode costs beyond it."
            if "raw_vec_server" in drain
            else "."
        ),
        "",
    ]
    return lines


def _spread(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _startup_line(drain: dict) -> list[str]:
    """Start-up on a line of its own: process start to the first message read (baselines) or
    to the first micro-batch (streamsift), median over the rounds."""
    parts = [
        f"{name} {_n((r.get('rates') or {}).get('startup_seconds', r.get('startup_seconds')), 1)} s"
        for name, r in drain.items()
        if r.get("exact")
    ]
    if not parts:
        return []
    return [
        "**Start-up** (process start to the first message read; streamsift: to its first "
        "micro-batch): " + ", ".join(parts) + ".",
        "",
    ]


def _ratios_section(rows: list[dict], pairs: int) -> list[str]:
    """Processing and wall ratios side by side, the steady one beside them, each the median of
    its A B A B pairs with their spread; an unstable ratio is marked, not counted."""
    lines = [
        "### Ratios (streamsift / baseline)",
        "",
        f"Each ratio is the median of {pairs} pair(s) of runs alternating in this bench run (A B "
        "A B); spread = (highest - lowest pair) / median, of the processing and wall ratios. "
        "A ratio whose pairs disagree by more than 20% is **unstable**: reported, never counted "
        "as a target met. Steady: both runs after their first batch (streamsift's first "
        "micro-batch; a baseline's reading until its first insert finished).",
        "",
    ]

    def stability(r: dict) -> str:
        return {True: "**unstable**", False: "stable", None: "–"}[r.get("unstable")]

    return lines + _table(
        ["ratio", "processing", "wall", "steady", "spread (processing / wall)", "pairs"],
        [
            [
                r["label"],
                _n(r["processing_rate"], 2),
                _n(r["wall_rate"], 2),
                _n(r.get("steady_rate"), 2),
                f"{_spread(r['spread'].get('processing_rate'))} / "
                f"{_spread(r['spread'].get('wall_rate'))}",
                stability(r),
            ]
            for r in rows
        ],
    )


def _large_section(ds: dict, ours: dict, batch_rows: int | None) -> list[str]:
    """What the `large drain` rows of the drain table drained, and how streamsift batched it."""
    prod = ds.get("producer", {})
    batches = ours.get("batches")
    admits = (
        f"up to {batch_rows:,} messages per micro-batch"
        if batch_rows
        else "as many messages per micro-batch as a pipeline does by default"
    )
    return [
        f"**Large drain** (the `large drain` rows): a second backlog of {ds.get('produced', 0):,} "
        f"events from the same generator ({ds.get('duplicates', 0):,} re-sends, "
        f"{ds.get('expected_unique', 0):,} distinct ids), loaded at "
        f"{_n(prod.get('achieved_rps'))} events/s; the bundled broker holds it in memory "
        f"({_n(ds.get('broker_rss_mb'))} MB RSS after loading). streamsift admits {admits} "
        f"here ({_n(batches)} micro-batches), so its steady rate is measured "
        "over most of the backlog.",
        "",
    ]


def _join_section(r: dict, o: dict, baseline: dict | None = None) -> list[str]:
    """The dedup-join drain in its own words: per left event, and its baseline if it ran."""
    latest = r.get("join_mode") == "latest"
    lines = ["### Dedup + inner join" + (" (mode latest)" if latest else ""), ""]
    if not r.get("exact"):
        return lines + [
            f"**FAILED**: {r.get('error') or _mismatch(r)}. No figures are reported for a run "
            "whose rows do not match the reference.",
            "",
        ]
    rates = r.get("rates") or {}
    res = r.get("resources") or {}
    busy = rates.get("processing_seconds")
    messages = r.get("messages") or 0
    lines += [
        f"Two topics drained by one pipeline: {r.get('left_events', 0):,} events (left) and "
        f"{r.get('right_events', 0):,} profile events (right), each deduplicated on its event "
        f"id ({o.get('window')} window), then inner-joined on the user id into ClickHouse. "
        + (
            f"Exact: {r.get('rows', 0):,} joined rows, one per event with a profile in its "
            "windows (join.mode latest), "
            if latest
            else f"Exact: {r.get('rows', 0):,} joined rows as the pure-Python reference "
            "expects, the same (event id, profile event id) pair checksum, "
        )
        + "no row from a re-send, an empty DLQ "
        f"({_n(r.get('late_dropped'))} records behind the join's watermark).",
        "",
        "Rates are per left event (the right stream's messages are read too, but not "
        "counted). " + _join_baseline(baseline),
        "",
    ]
    lines += _table(
        ["figure", "value"],
        [
            ["left events/s (processing)", _n(rates.get("processing_rate"))],
            ["left events/s (steady, after the 1st micro-batch)", _n(rates.get("steady_rate"))],
            ["left events/s (wall, start-up included)", _n(rates.get("wall_rate"))],
            [
                "all messages/s (processing, both topics)",
                _n(messages / busy if busy else None),
            ],
            ["processing s / wall s", f"{_n(busy, 1)} / {_n(r.get('wall_seconds'), 1)}"],
            ["start-up s (process start to 1st batch)", _n(r.get("startup_seconds"), 1)],
            ["micro-batches", _n(r.get("batches"))],
            ["peak RSS / PSS MB", f"{_n(res.get('peak_rss_mb'))} / {_n(res.get('peak_pss_mb'))}"],
            [
                "CPU s per M left events (all / processing)",
                f"{_n(res.get('cpu_seconds_per_million'))} / "
                f"{_n(res.get('processing_cpu_seconds_per_million'))}",
            ],
            ["join state MB (on disk)", _n((r.get("join_state_bytes") or 0) / 2**20, 1)],
        ],
    )
    return lines


def _join_baseline(baseline: dict | None) -> str:
    if baseline is None:
        return "There is no baseline for this scenario in this run."
    rate = (baseline.get("rates") or {}).get("processing_rate")
    if not baseline.get("exact") or rate is None:
        return "Its only baseline, a raw consumer with an in-memory join, FAILED (see above)."
    return (
        "Its only baseline is a hand-written raw consumer (both topics, dict dedup, an "
        "in-memory symmetric hash join with the same windows and watermark rule, Arrow "
        f"inserts): {rate:,.0f} left events/s on the same data, exact."
    )


def _mismatch(r: dict) -> str:
    if "pair_checksum_ok" in r:
        return (
            f"rows {r.get('rows')} vs expected {r.get('expected_rows')}, distinct pairs "
            f"{r.get('distinct_pairs')} vs {r.get('expected_distinct_pairs')}, rows from "
            f"re-sends {r.get('later_versions')}, pair checksum "
            f"{'ok' if r.get('pair_checksum_ok') else 'wrong'}, read {r.get('read')}"
        )
    return (
        f"rows {r.get('rows')} vs expected {r.get('expected_rows')}, distinct ids "
        f"{r.get('distinct_ids')}, later versions {r.get('later_versions')}, id checksum "
        f"{'ok' if r.get('id_checksum_ok') else 'wrong'}, read {r.get('read')}"
    )


def _live_section(scenario: str, live: dict, trigger: str) -> list[str]:
    lines = [f"## Live run: {LABELS.get(scenario, scenario)}", ""]
    if not live.get("exact"):
        lines += [
            f"**FAILED**: {live.get('error') or _mismatch(live)}. No figures are reported "
            "for a run whose counts do not match.",
            "",
        ]
        return lines
    res = live.get("resources") or {}
    if live.get("stats_read_matches") is False:
        lines += [
            f"Note: the run's own count of messages read (RunStats.read, from Spark's progress "
            f"offsets) says {live.get('read', 0):,} while {live.get('events', 0):,} were "
            "processed (the table is exact): some micro-batches report a start offset equal "
            "to their end although they had rows. The bench follows the end offsets instead.",
            "",
        ]
    mem = live.get("memory")
    if mem:
        lines += [
            f"Soak: {live.get('produced', 0):,} events over {mem['seconds']:,.0f} s with a "
            f"{mem['window']} dedup window; {mem['distinct_keys']:,} distinct keys in the state "
            f"({_n((live.get('dedup_state_bytes') or 0) / 2**20, 1)} MB on disk). RSS of the "
            f"process tree {_n(mem['early_rss_mb'])} MB at 20-30% of the run, "
            f"{_n(mem['end_rss_mb'])} MB in its last 10% "
            f"({_n((mem['change'] or 0) * 100, 1)}%): "
            f"{'flat' if mem['flat'] else '**not flat**'} within 10%. By process: "
            + "; ".join(
                f"{role} {_n(v['early_rss_mb'])} -> {_n(v['end_rss_mb'])} MB "
                f"({_n((v['change'] or 0) * 100, 1)}%)"
                for role, v in (mem.get("by_role") or {}).items()
                if role != "other"
            )
            + ".",
            "",
        ]
    lines += [
        f"{live.get('produced', 0):,} events in fixed-rate steps while the pipeline ran "
        f"continuously (trigger every {trigger}); exact: {live.get('rows', 0):,} rows as expected. "
        f"Peak RSS {_n(res.get('peak_rss_mb'))} MB ({_roles(res)}), peak PSS "
        f"{_n(res.get('peak_pss_mb'))} MB.",
        "",
        "Latency = the row's insert time in ClickHouse (a `DEFAULT now64(3)` column) minus "
        "the time the generator handed the message to the Kafka producer (`produced_at_ms` "
        "in the payload); same clock, resolution 1 ms.",
        "",
    ]
    rows = [
        [
            f"{s['rate']:,}",
            _n(s["achieved_rps"]),
            _n(s["latency"]["rows"]),
            _n(s["latency"]["p50"], 3),
            _n(s["latency"]["p95"], 3),
            _n(s["latency"]["p99"], 3),
            _n(s["latency"]["max"], 3),
        ]
        for s in live.get("steps", [])
        if s["phase"] == "latency" and "latency" in s
    ]
    if rows:
        lines += _table(
            ["input events/s", "achieved", "rows", "p50 s", "p95 s", "p99 s", "max s"], rows
        )
    steps = live.get("steps", [])
    if steps:
        lines += [
            "Every step, fixed-rate ones first, then the ramp (which stops at its first "
            "failure). A step is sustained when the lag (messages produced minus the end "
            "offsets of the pipeline's last finished micro-batch, reported about once a "
            f"second) stays under {LAG_BOUND_S:g} s of input in the step's second half, grows "
            f"by less than {LAG_GROWTH_S:g} s of input from its second to its last quarter, "
            f"and is gone within {DRAIN_GRACE_S:g} s after the step. Then Spark's own account "
            "of the micro-batches that ran during the step: time spent finding the end of the "
            "topic (`latestOffset`) and processing (`addBatch`). The last column is the cores "
            "each party kept busy while the step produced (of 2): the pipeline's process tree, "
            "the broker, the load generator (the bench's own process) and the whole machine.",
            "",
        ]
        lines += _table(
            [
                "step",
                "input events/s",
                "achieved",
                "max lag (events)",
                "max lag (s of input)",
                "drained after",
                "sustained",
                "batches",
                "latestOffset s",
                "addBatch s",
                "cores: " + " / ".join(PARTIES),
            ],
            [
                [
                    s["phase"],
                    f"{s['rate']:,}",
                    _n(s["achieved_rps"]),
                    _n(s["max_lag"]),
                    _n(s["max_lag_seconds"], 2),
                    f"{s['drain_seconds_after_step']:.1f} s"
                    if s["drain_seconds_after_step"] is not None
                    else f"> {DRAIN_GRACE_S:g} s",
                    "yes" if s["sustained"] else "**no**",
                    _n((s.get("spark") or {}).get("batches")),
                    _n((s.get("spark") or {}).get("latest_offset_s"), 1),
                    _n((s.get("spark") or {}).get("add_batch_s"), 1),
                    _cores(s.get("cores")),
                ]
                for s in steps
            ],
        )
    if live.get("steps"):
        lines += [
            "Highest sustained input rate: "
            f"**{_n(live.get('sustained_rate')) if live.get('sustained_rate') else 'below every step'}"
            " events/s** "
            f"({live.get('ramp_limited_by')}; every step at or below it kept the lag bounded).",
            "",
        ]
    return lines


def _cores(cores: dict | None) -> str:
    if not cores:
        return "–"
    return " / ".join(f"{cores[p]:.2f}" if p in cores else "–" for p in PARTIES)


def _roles(res: dict) -> str:
    roles = res.get("peak_rss_mb_by_role") or {}
    return ", ".join(f"{k} {v:,.0f} MB" for k, v in sorted(roles.items())) or "–"
