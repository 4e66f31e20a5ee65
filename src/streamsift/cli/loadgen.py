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
            "correct dedup pipeline must hold (--truth)."
        ),
    )
    p.add_argument("--topic", required=True)
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
    p.add_argument("--truth", type=Path, help="write the ground truth JSON here")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=cmd_loadgen, logs=False)


def cmd_loadgen(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from streamsift.testing.broker import Broker, create_topic
    from streamsift.testing.loadgen import LoadGenerator, LoadSpec

    if args.events <= 0 or args.rps < 0 or args.partitions <= 0:
        return fail("--events and --partitions must be positive, --rps >= 0", code=2)
    try:
        spec = LoadSpec(
            duplicates=args.duplicates,
            keys=args.keys,
            late=args.late,
            late_by=timedelta(seconds=args.late_by),
            payload_bytes=args.payload_bytes,
            seed=args.seed,
        )
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
        if args.topic not in topics:
            # retention configs explicit: some tools (quixstreams) read them back
            create_topic(
                servers,
                args.topic,
                args.partitions,
                {"retention.ms": "604800000", "retention.bytes": "-1"},
            )
        gen = LoadGenerator(spec, servers, args.topic)
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
        **gen.truth.as_dict(),
        "topic": args.topic,
        "truth_file": str(args.truth) if args.truth else None,
    }
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        target = f"{args.rps:,.0f}/s" if args.rps else "max"
        print(
            f"sent {report.acked:,} events to {args.topic} in {report.seconds:.2f} s: "
            f"{report.achieved_rps:,.0f} events/s (target {target})\n"
            f"  duplicates {gen.truth.duplicates:,}, late {gen.truth.late:,}, "
            f"expected unique after dedup {gen.truth.expected_unique:,}"
            + (f"\n  truth written to {args.truth}" if args.truth else "")
        )
    return 0
