"""`streamsift loadgen`: produce realistic events at a controlled rate and write the truth."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

from streamsift.cli.output import fail


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "loadgen",
        help="produce JSON events at a controlled rate (token bucket) and write the ground truth",
        description=(
            "Produce a reproducible stream of ~realistic JSON events (ids, nested user/session/"
            "device, tags, amounts, event times) keyed by event_id, at a target rate, with a "
            "share of re-sends and late events; print the achieved rate and write what a "
            "correct dedup pipeline must hold (--truth). With --join-topic, also a second, "
            "related stream of user profile events (joined to the events on the user id) and "
            "the truth of an inner join with dedup on both sides."
        ),
    )
    p.add_argument("--topic", required=True, help="the topic to produce to")
    p.add_argument("--events", type=int, required=True, help="how many messages to send")
    p.add_argument("--rps", type=float, default=0, help="target events/s (0: as fast as possible)")
    p.add_argument("--duplicates", type=float, default=0.2, help="share of re-sends (0..0.9)")
    p.add_argument(
        "--keys",
        type=int,
        default=10_000,
        help="a re-send repeats one of the last K original ids (keep K x 10 ms under the dedup window)",
    )
    p.add_argument(
        "--late", type=float, default=0.0, help="share of late events (fresh ids, old event time)"
    )
    p.add_argument(
        "--late-by", type=float, default=7200, help="how far behind a late event is, seconds"
    )
    p.add_argument("--payload-bytes", type=int, default=1024, help="pad events to this size")
    p.add_argument("--partitions", type=int, default=3, help="partitions when the topic is created")
    p.add_argument(
        "--bootstrap-servers",
        default="127.0.0.1:9092",
        help="Kafka to produce to (default 127.0.0.1:9092)",
    )
    p.add_argument(
        "--bundled-broker",
        action="store_true",
        help="start the bundled broker for this run only (to measure the generator itself)",
    )
    p.add_argument("--seed", type=int, default=7, help="same seed, same event sequence")
    p.add_argument(
        "--linger-ms",
        type=int,
        help="producer batching delay, default 50 (the bundled broker slows down with many "
        "tiny batches)",
    )
    j = p.add_argument_group(
        "join stream",
        "With --join-topic, user profile events {event_id, user: {id, name, plan, country}, "
        "version, attempt, updated_at} keyed by event_id go to a second topic, interleaved with "
        "the events; the join key is user.id on both sides. The truth file then also holds "
        "`join`: the rows (count and a checksum of the (event id, profile event id) pairs) of "
        "an inner join with first-wins dedup on both sides. Late events (--late) get user ids "
        "no profile carries.",
    )
    j.add_argument("--join-topic", help="also produce the join's right stream into this topic")
    j.add_argument(
        "--join-events", type=int, help="right messages (re-sends included; default events / 10)"
    )
    j.add_argument(
        "--join-duplicates", type=float, help="share of right re-sends (default: --duplicates)"
    )
    j.add_argument(
        "--join-unmatched",
        type=float,
        default=0.1,
        help="share of the 1,000 users that never publish a profile (default 0.1)",
    )
    j.add_argument(
        "--join-window",
        default="30s,60s",
        help="LEFT[,RIGHT] join windows: a profile at tr matches an event at tl when "
        "tl - RIGHT <= tr <= tl + LEFT (default 30s,60s; one value: both)",
    )
    j.add_argument(
        "--dedup-window", default="1h", help="dedup window of both sides, for the truth (1h)"
    )
    p.add_argument("--truth", type=Path, help="write the ground truth JSON here")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=cmd_loadgen, logs=False)


def cmd_loadgen(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from streamsift.embedded.broker import Broker, create_topic
    from streamsift_bench.loadgen import LoadGenerator, LoadSpec

    if args.events <= 0 or args.rps < 0 or args.partitions <= 0:
        return fail("--events and --partitions must be positive, --rps >= 0", code=2)
    if args.join_topic is not None and args.join_topic == args.topic:
        return fail("--join-topic must differ from --topic", code=2)
    try:
        spec = LoadSpec(
            duplicates=args.duplicates,
            keys=args.keys,
            late=args.late,
            late_by=timedelta(seconds=args.late_by),
            payload_bytes=args.payload_bytes,
            seed=args.seed,
        )
        join = join_spec(args) if args.join_topic else None
    except ValueError as exc:
        return fail(str(exc), code=2)
    with ExitStack() as stack:
        servers = args.bootstrap_servers
        if args.bundled_broker:
            servers = stack.enter_context(Broker()).bootstrap_servers
        try:
            topics = AdminClient({"bootstrap.servers": servers}).list_topics(timeout=10).topics
        except KafkaException as exc:
            return fail(f"Kafka at {servers} did not answer: {exc}", "is the broker up?")
        for topic in (args.topic, args.join_topic):
            if topic and topic not in topics:
                # retention configs explicit: some tools (quixstreams) read them back
                create_topic(
                    servers,
                    topic,
                    args.partitions,
                    {"retention.ms": "604800000", "retention.bytes": "-1"},
                )
        gen = LoadGenerator(
            spec,
            servers,
            args.topic,
            join=join,
            join_topic=args.join_topic,
            linger_ms=args.linger_ms,
        )
        last = [0.0]

        def show(t: float, sent: int, acked: int) -> None:
            if not args.json and t - last[0] >= 1.0:
                last[0] = t
                print(
                    f"\rsent {sent:,} / {args.events:,}, acked {acked:,}", end="", file=sys.stderr
                )

        report = gen.send(args.events, args.rps or None, on_sample=show)
        gen.close()
        if not args.json:
            print(file=sys.stderr)
        if args.truth:
            gen.write_truth(args.truth, {"send": report.as_dict()})
    summary: dict[str, Any] = {
        **report.as_dict(),
        **{k: v for k, v in gen.truth.as_dict().items() if k not in ("sample", "sample_every")},
        "topic": args.topic,
        "truth_file": str(args.truth) if args.truth else None,
    }
    join_truth = gen.join_truth().as_dict() if join else None
    if join_truth:
        summary["join"] = {"topic": args.join_topic, **join_truth}
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        target = f"{args.rps:,.0f}/s" if args.rps else "max"
        print(
            f"sent {report.acked:,} events to {args.topic} in {report.seconds:.2f} s: "
            f"{report.achieved_rps:,.0f} events/s (target {target})\n"
            f"  duplicates {gen.truth.duplicates:,}, late {gen.truth.late:,}, "
            f"expected unique after dedup {gen.truth.expected_unique:,}"
        )
        if join_truth:
            print(
                f"sent {report.join_acked:,} profile events to {args.join_topic} "
                f"({join_truth['right_duplicates']:,} re-sends)\n"
                f"  inner join after dedup: {join_truth['expected_rows']:,} rows; "
                f"{join_truth['left_matched']:,} events matched, "
                f"{join_truth['left_unmatched']:,} without a profile in their window"
            )
        if args.truth:
            print(f"  truth written to {args.truth}")
    return 0


def join_windows(text: str) -> tuple[timedelta, timedelta]:
    """`30s,60s` (left, right) or `30s` (both)."""
    from streamsift.config.durations import parse_duration

    parts = [x.strip() for x in text.split(",")]
    if len(parts) not in (1, 2) or not all(parts):
        raise ValueError(f"--join-window takes LEFT[,RIGHT], e.g. 30s,60s; got {text!r}")
    left = parse_duration(parts[0])
    return left, parse_duration(parts[-1])


def join_spec(args: argparse.Namespace) -> Any:
    """The JoinLoadSpec the --join-* arguments describe."""
    from streamsift.config.durations import parse_duration
    from streamsift_bench.loadgen import JoinLoadSpec

    right = args.join_events if args.join_events is not None else args.events // 10
    left_window, right_window = join_windows(args.join_window)
    return JoinLoadSpec(
        right_events=right,
        left_events=args.events,
        duplicates=args.duplicates if args.join_duplicates is None else args.join_duplicates,
        unmatched=args.join_unmatched,
        left_window=left_window,
        right_window=right_window,
        dedup_window=parse_duration(args.dedup_window),
    )
