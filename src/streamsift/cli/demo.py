"""`streamsift demo`: a dedup pipeline on the bundled broker and embedded ClickHouse.

It produces a stream with known duplicates, runs the pipeline until caught up, and checks
what ClickHouse holds against the generator's truth. Exit code 1 on any mismatch.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamsift.cli.output import StatusLine
from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.embedded.broker import Broker
from streamsift.engine.runner import PipelineRunner
from streamsift.engine.signals import StopFlag, install_stop_handlers
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce

DEMO_FIELDS = (
    ("event_id", "string", "event_id", "UUID"),
    ("type", "string", "type", "LowCardinality(String)"),
    ("user.id", "string", "user_id", "String"),
    ("user.name", "string", "user_name", "String"),
    ("user.email", "string", "user_email", "String"),
    ("tags", "array", "tags", "Array(String)"),
    ("amount", "float", "amount", "Float64"),
    ("attempt", "int", "attempt", "UInt32"),
    ("created_at", "timestamp", "created_at", "DateTime64(3, 'UTC')"),
)


def demo_pipeline(
    bootstrap_servers: str, topic: str, data_dir: Path, window: str = "1h"
) -> Pipeline:
    """The demo's pipeline document: dedup on event_id within `window` of created_at."""
    return parse_pipeline(
        {
            "name": "demo",
            "source": {
                "bootstrap_servers": bootstrap_servers,
                "topic": topic,
                "schema": {
                    "fields": [{"name": f, "type": t} for f, t, _, _ in DEMO_FIELDS],
                    "event_time": "created_at",
                },
            },
            "dedup": {"key": "event_id", "time_window": window},
            "sink": {
                "clickhouse": {"path": str(data_dir / "clickhouse")},
                "table": "events",
                "create_table": True,
                "order_by": ["event_id"],
                "mapping": [{"field": f, "column": c, "type": ct} for f, _, c, ct in DEMO_FIELDS],
            },
            "runtime": {"checkpoint_dir": str(data_dir / "checkpoints" / "demo")},
        }
    )


@dataclass(frozen=True)
class DemoOptions:
    events: int = 10_000
    duplicates: float = 0.2
    keys: int | None = 1_000
    partitions: int = 3
    seed: int = 7
    data_dir: Path | None = None
    verbose: bool = False


def run_demo(
    opts: DemoOptions, progress: Any = None, stop: StopFlag | None = None
) -> dict[str, Any] | None:
    """Run the whole demo and return the report (see `report_lines`), or None when `stop`
    was set before the pipeline read every event (a partial run has nothing to compare)."""
    data_dir = opts.data_dir or Path(tempfile.mkdtemp(prefix="streamsift-demo-"))
    try:
        with Broker() as broker:
            broker.create_topic("events", opts.partitions)
            truth = Truth()
            started = time.monotonic()
            produce(
                broker.bootstrap_servers,
                "events",
                generate(EventSpec(opts.events, opts.duplicates, opts.keys, opts.seed), truth),
            )
            produce_s = time.monotonic() - started
            pipeline = demo_pipeline(broker.bootstrap_servers, "events", data_dir)
            runner = PipelineRunner(
                pipeline, base_dir=data_dir, verbose=opts.verbose, on_progress=progress, stop=stop
            )
            started, started_wall = time.monotonic(), time.time()
            result = runner.run(until_caught_up=True)
            run_s = time.monotonic() - started
            if result.stopped and result.stats["read"] < truth.produced:
                return None
            table_rows = runner.writer.count("events")
            distinct = runner.writer.query_rows("SELECT uniqExact(event_id) FROM events")[0][0]
            later_versions = runner.writer.count("events", "attempt > 0")
            dlq_rows = runner.writer.count(pipeline.dlq_table)
    finally:
        if opts.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    stats = result.stats
    report = {
        **truth.as_dict(),
        "rows_in_clickhouse": table_rows,
        "distinct_keys_in_clickhouse": int(distinct),
        "later_versions_kept": later_versions,
        "duplicates_dropped": stats["duplicates"],
        "dlq": dlq_rows,
        "produce_seconds": round(produce_s, 2),
        "run_seconds": round(run_s, 2),
        # the pipeline's start (Spark's included) to its first rows in the table
        "first_rows_seconds": round(stats["first_rows_at"] - started_wall, 2)
        if stats["first_rows_at"]
        else None,
        "processing_seconds": round(stats["busy_ms"] / 1000, 2),
        "rows_per_second": round(stats["read"] / (stats["busy_ms"] / 1000))
        if stats["busy_ms"]
        else None,
    }
    report["ok"] = (
        table_rows == truth.expected_unique
        and distinct == truth.expected_unique
        and later_versions == 0
        and dlq_rows == truth.malformed
        and stats["duplicates"] == truth.duplicates
    )
    return report


def report_lines(report: dict[str, Any]) -> list[str]:
    rate = f"{report['rows_per_second']:,} events/s" if report["rows_per_second"] else "n/a"
    return [
        f"  produced               {report['produced']:>10,}",
        f"  expected unique        {report['expected_unique']:>10,}",
        f"  rows in ClickHouse     {report['rows_in_clickhouse']:>10,}",
        f"  duplicates dropped     {report['duplicates_dropped']:>10,}   (generator sent {report['duplicates']:,})",
        f"  DLQ                    {report['dlq']:>10,}",
        f"  later versions kept    {report['later_versions_kept']:>10,}   (first arrival must win)",
        f"  pipeline run           {report['run_seconds']:>9.1f}s   (Spark start-up included)",
        f"  first rows written     {_seconds(report['first_rows_seconds'])}   (after the pipeline's start)",
        f"  processing             {report['processing_seconds']:>9.1f}s   ({rate})",
        "OK: ClickHouse holds exactly one row per distinct key"
        if report["ok"]
        else "MISMATCH: see above",
    ]


def _seconds(value: float | None) -> str:
    return f"{value:>9.1f}s" if value is not None else f"{'n/a':>10}"


def print_report(
    report: dict[str, Any],
    as_json: bool,
    lines: Callable[[dict[str, Any]], list[str]] = report_lines,
) -> None:
    """The report as one JSON object, or as the lines `lines` makes of it."""
    if as_json:
        print(json.dumps(report, sort_keys=True))
    else:
        print("\n".join(lines(report)))
    sys.stdout.flush()


def run_demo_command(
    intro: str,
    run: Callable[[StatusLine | None, StopFlag], dict[str, Any] | None],
    lines: Callable[[dict[str, Any]], list[str]],
    as_json: bool,
    stopped_line: str,
) -> int:
    """What `demo` and `demo --join` share once their arguments are checked: say what runs,
    run it under the stop signals of `run` (Ctrl-C/SIGTERM: finish the micro-batch in
    flight, exit 0; a second one aborts), print the report. `run(progress, stop)` returns the
    report, or None when a stop left nothing to compare (then `stopped_line` is printed).
    The handlers before are put back afterwards (the demo may run inside another program)."""
    if not as_json:
        print(intro, file=sys.stderr)
    status = StatusLine()
    stop = StopFlag()
    handlers_before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    install_stop_handlers(stop.set)
    try:
        report = run(None if as_json else status, stop)
    finally:
        status.close()
        for sig, handler in handlers_before.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(sig, handler)
    if report is None:
        print(stopped_line, file=sys.stderr)
        return 0
    print_report(report, as_json, lines)
    return 0 if report["ok"] else 1


def cmd_demo_dedup(args: Any) -> int:
    """`streamsift demo` (arguments checked by `cli.main.cmd_demo`)."""
    options = DemoOptions(
        events=args.events,
        duplicates=args.duplicates,
        keys=args.keys,
        partitions=args.partitions,
        seed=args.seed,
        data_dir=args.data_dir,
        verbose=args.verbose,
    )
    return run_demo_command(
        f"streamsift demo: {args.events:,} events ({args.duplicates:.0%} duplicates over "
        f"{args.keys:,} keys) -> {args.partitions}-partition topic on the bundled broker -> "
        "dedup (1h window) -> embedded ClickHouse",
        lambda progress, stop: run_demo(options, progress=progress, stop=stop),
        report_lines,
        args.json,
        stopped_line="demo stopped before it read every event: nothing to compare",
    )
