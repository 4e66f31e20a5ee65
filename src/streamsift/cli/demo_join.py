"""`streamsift demo --join`: a dedup + temporal join pipeline on the bundled broker.

Two related streams go into 3-partition topics: orders (the left side, keyed by `order_id`)
and user profile events (the right side, keyed by `event_id`), both with re-sends (exact
copies, same key, so same partition), some orders of users that never publish a profile,
and a few malformed messages on each side. The pipeline deduplicates each side and joins
them (inner by default, or left outer) into embedded ClickHouse, until caught up. A small
reference computes the rows a correct pipeline must write from the generated data
alone; the demo compares full row sets, the duplicates dropped on each side and the DLQ,
and exits 1 on any mismatch. The pipeline, the malformed messages and the reference live in
`streamsift.sample_data.join_events` (the kill -9 harness runs the same join).

Left-outer NULL rows are written only once the join's watermark has passed their window
(docs/semantics.md), which takes later events. So each stream ends with one event a day
after all the others (`tail-order` and the profile of its user `tail-user`, which match each
other: one joined row, counted in the expectation). That moves the watermark past every
other window before the run ends, and the expectation is exact for both join types.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamsift.engine.progress import RunStats, offsets
from streamsift.engine.signals import StopFlag
from streamsift.sample_data.join_events import (
    BAD_ORDERS,
    BAD_USERS,
    ORDERS_TOPIC,
    ROW_COLUMNS,
    TABLE,
    USERS_TOPIC,
    join_pipeline,
    reference_rows,
)

# ---------------------------------------------------------------------------- the run


@dataclass
class SideStats(RunStats):
    """RunStats that also keeps messages read and rows emitted per topic (= per side)."""

    read_by_topic: dict[str, int] = field(default_factory=dict)
    rows_by_topic: dict[str, int] = field(default_factory=dict)

    def ingest(self, progress: Any) -> None:
        p = progress if isinstance(progress, dict) else json.loads(progress.json)
        before = self.batches
        super().ingest(p)
        if self.batches == before:  # a batch already counted, or an empty report
            return
        for src in p.get("sources") or []:
            start = offsets(src.get("startOffset")) or self.initial_offsets
            end = offsets(src.get("endOffset"))
            topics = {key.rpartition("/")[0] for key in end}
            for key, value in end.items():
                topic = key.rpartition("/")[0]
                read = max(0, value - start.get(key, value))
                self.read_by_topic[topic] = self.read_by_topic.get(topic, 0) + read
            if len(topics) == 1:
                topic = topics.pop()
                rows = int(src.get("numInputRows") or 0)
                self.rows_by_topic[topic] = self.rows_by_topic.get(topic, 0) + rows

    def duplicates_of(self, topic: str) -> int:
        return self.read_by_topic.get(topic, 0) - self.rows_by_topic.get(topic, 0)


@dataclass(frozen=True)
class JoinDemoOptions:
    events: int = 10_000  # order messages, re-sends included
    users: int = 1_000
    duplicates: float = 0.2
    join_type: str = "inner"
    partitions: int = 3
    seed: int = 7
    data_dir: Path | None = None
    verbose: bool = False


def run_join_demo(
    opts: JoinDemoOptions, progress: Any = None, stop: StopFlag | None = None
) -> dict[str, Any] | None:
    """Produce both streams, run the pipeline until caught up, compare with the reference.

    None when `stop` was set: a stopped run may miss the micro-batches that the watermark's
    last move triggers (left-outer NULL rows), so it has nothing exact to compare."""
    from streamsift.embedded.broker import Broker
    from streamsift.engine.query import DEFAULT_MAX_ROWS_PER_BATCH
    from streamsift.engine.runner import PipelineRunner
    from streamsift.sample_data.generator import (
        JoinSpec,
        generate_join_streams,
        produce,
        produce_raw,
    )

    streams = generate_join_streams(
        JoinSpec(orders=opts.events, users=opts.users, duplicates=opts.duplicates, seed=opts.seed)
    )
    expected = reference_rows(streams.orders, streams.users, opts.join_type)
    data_dir = opts.data_dir or Path(tempfile.mkdtemp(prefix="streamsift-demo-join-"))
    try:
        with Broker() as broker:
            servers = broker.bootstrap_servers
            started = time.monotonic()
            for topic, events, key, bad in (
                (ORDERS_TOPIC, streams.orders, "order_id", BAD_ORDERS),
                (USERS_TOPIC, streams.users, "event_id", BAD_USERS),
            ):
                broker.create_topic(topic, opts.partitions)
                tail = 1 if streams.tail_events else 0
                produce(servers, topic, events[: len(events) - tail], key_field=key)
                produce_raw(servers, topic, bad)  # mid-stream, before the tail event
                produce(servers, topic, events[len(events) - tail :], key_field=key)
            produce_s = time.monotonic() - started
            # One micro-batch takes everything: were a watermark event read in an earlier batch
            # than other events of its topic (partitions are read at their own pace), it would
            # put them behind the watermark, and the join would drop them as late.
            whole = max(len(streams.orders) + len(BAD_ORDERS), len(streams.users) + len(BAD_USERS))
            pipeline = join_pipeline(
                servers, data_dir, opts.join_type, max(whole, DEFAULT_MAX_ROWS_PER_BATCH)
            )
            runner = PipelineRunner(
                pipeline, base_dir=data_dir, verbose=opts.verbose, on_progress=progress, stop=stop
            )
            runner.stats = stats = SideStats()
            started = time.monotonic()
            result = runner.run(until_caught_up=True)
            run_s = time.monotonic() - started
            if result.stopped:
                return None
            actual = Counter(
                (o, e, float(a), n, p)
                for o, e, a, n, p in runner.writer.query_rows(f"SELECT {ROW_COLUMNS} FROM {TABLE}")
            )
            null_rows = runner.writer.count(TABLE, "user_event_id IS NULL")
            dlq_rows = runner.writer.count(pipeline.dlq_table)
    finally:
        if opts.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    run = result.stats
    missing, unexpected = expected.rows - actual, actual - expected.rows
    bad = len(BAD_ORDERS) + len(BAD_USERS)
    report: dict[str, Any] = {
        "join_type": opts.join_type,
        "orders_produced": len(streams.orders) + len(BAD_ORDERS),
        "users_produced": len(streams.users) + len(BAD_USERS),
        "orders_resent": streams.order_resends,
        "users_resent": streams.user_resends,
        "orders_of_unknown_users": streams.orphan_orders,
        "watermark_events": streams.tail_events,
        "orders_malformed": len(BAD_ORDERS),
        "users_malformed": len(BAD_USERS),
        "expected_rows": sum(expected.rows.values()),
        "rows_in_clickhouse": sum(actual.values()),
        "rows_equal": not missing and not unexpected,
        "missing_rows": sum(missing.values()),
        "unexpected_rows": sum(unexpected.values()),
        "expected_unmatched_orders": expected.unmatched_orders,
        "expected_null_rows": expected.null_rows,
        "null_rows_in_clickhouse": null_rows,
        "expected_pending": expected.pending,
        "expected_duplicates_orders": expected.order_duplicates,
        "expected_duplicates_users": expected.user_duplicates,
        "duplicates_dropped_orders": stats.duplicates_of(ORDERS_TOPIC),
        "duplicates_dropped_users": stats.duplicates_of(USERS_TOPIC),
        "duplicates_dropped": run["duplicates"],
        "expected_dlq": bad,
        "dlq": dlq_rows,
        "read": run["read"],
        "late_dropped": run["late_dropped"],
        "late": run["late"],
        "batches": run["batches"],
        "produce_seconds": round(produce_s, 2),
        "run_seconds": round(run_s, 2),
        "processing_seconds": round(run["busy_ms"] / 1000, 2),
    }
    report["ok"] = (
        report["rows_equal"]
        and report["rows_in_clickhouse"] == report["expected_rows"]
        and null_rows == expected.null_rows
        and report["duplicates_dropped_orders"] == expected.order_duplicates
        and report["duplicates_dropped_users"] == expected.user_duplicates
        and dlq_rows == bad
        and run["read"] == report["orders_produced"] + report["users_produced"]
        and run["late_dropped"] == 0
        and run["late"] == 0
    )
    return report


# ---------------------------------------------------------------------------- output


def report_lines(r: dict[str, Any]) -> list[str]:
    left = r["join_type"] == "left"
    tail = r["watermark_events"] // 2

    def produced(side: str, extra: str) -> str:
        resent, malformed = r[f"{side}_resent"], r[f"{side}_malformed"]
        new = r[f"{side}_produced"] - resent - malformed - tail
        return (
            f"({new:,} new + {resent:,} re-sends + {malformed} malformed + {tail} watermark "
            f"event{extra})"
        )

    if left:
        expected = f"(incl. {r['expected_null_rows']:,} orders without a match, user fields NULL)"
    else:
        expected = f"({r['expected_unmatched_orders']:,} orders without a match: no row)"
    if r["rows_equal"]:
        actual = "(equal to the reference, row by row)"
    else:
        actual = f"({r['missing_rows']:,} missing, {r['unexpected_rows']:,} not expected)"
    lines = [
        f"  orders produced            {r['orders_produced']:>10,}   "
        + produced("orders", f"; {r['orders_of_unknown_users']:,} of users with no profile"),
        f"  user events produced       {r['users_produced']:>10,}   " + produced("users", ""),
        f"  duplicates dropped, orders {r['duplicates_dropped_orders']:>10,}   "
        f"(expected {r['expected_duplicates_orders']:,})",
        f"  duplicates dropped, users  {r['duplicates_dropped_users']:>10,}   "
        f"(expected {r['expected_duplicates_users']:,})",
        f"  expected joined rows       {r['expected_rows']:>10,}   {expected}",
        f"  rows in ClickHouse         {r['rows_in_clickhouse']:>10,}   {actual}",
    ]
    if left:
        lines.append(
            f"  NULL rows in ClickHouse    {r['null_rows_in_clickhouse']:>10,}   "
            f"(expected {r['expected_null_rows']:,})"
        )
    lines += [
        f"  DLQ                        {r['dlq']:>10,}   (expected {r['expected_dlq']:,})",
        f"  behind the join watermark  {r['late_dropped']:>10,}   (expected 0)",
        f"  pipeline run               {r['run_seconds']:>9.1f}s   (Spark start-up included)",
    ]
    if tail:
        lines += [
            "  each stream ends with a watermark event a day after all others (the two match:",
            "  one joined row, counted above), so the watermark passes every join window before",
            "  the run ends"
            + (": without it, NULL rows would wait for later events" if left else ""),
        ]
    lines.append(
        "OK: ClickHouse holds exactly the reference's joined rows"
        if r["ok"]
        else "MISMATCH: see above"
    )
    return lines


def cmd_demo_join(args: Any) -> int:
    """`streamsift demo --join [--join-type inner|left]` (arguments checked by
    `cli.main.cmd_demo`; `--keys` is the number of users)."""
    from streamsift.cli.demo import run_demo_command

    join_type = args.join_type or "inner"
    options = JoinDemoOptions(
        events=args.events,
        users=args.keys,
        duplicates=args.duplicates,
        join_type=join_type,
        partitions=args.partitions,
        seed=args.seed,
        data_dir=args.data_dir,
        verbose=args.verbose,
    )
    return run_demo_command(
        f"streamsift demo --join: {args.events:,} orders and the profile events of "
        f"{args.keys:,} users ({args.duplicates:.0%} re-sends on each side) -> two "
        f"{args.partitions}-partition topics on the bundled broker -> dedup (1h) each -> "
        f"{join_type} join (profile from 1h before to 5m after the order) -> embedded ClickHouse",
        lambda progress, stop: run_join_demo(options, progress=progress, stop=stop),
        report_lines,
        args.json,
        stopped_line="demo stopped before it finished: nothing to compare",
    )
