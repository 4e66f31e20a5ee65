"""`streamsift chaos`: the kill -9 harness (see streamsift_bench.chaos)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "chaos", help="SIGKILL a running pipeline at random moments and check the result is exact"
    )
    p.add_argument(
        "--shape",
        choices=["dedup", "join"],
        default="dedup",
        help="dedup: one topic, dedup; join: two topics, dedup each, temporal join (orders ⋈ users)",
    )
    p.add_argument(
        "--join-type",
        choices=["inner", "left"],
        default="inner",
        help="with --shape join: inner (default) or left outer",
    )
    p.add_argument(
        "--join-mode",
        choices=["interval", "latest"],
        default="interval",
        help="with --shape join: interval (every pair, default) or latest (one row per order)",
    )
    p.add_argument(
        "--events", type=int, default=60_000, help="events (dedup) or order messages (join)"
    )
    p.add_argument("--users", type=int, default=1_000, help="users with profiles (join)")
    p.add_argument("--kills", type=int, default=20, help="how many times to kill -9 the run")
    p.add_argument(
        "--mode",
        choices=["embedded", "server"],
        default="embedded",
        help="embedded ClickHouse, or a ClickHouse HTTP server process",
    )
    p.add_argument("--min-up", type=float, default=4.0, help="shortest run before a kill, seconds")
    p.add_argument("--max-up", type=float, default=25.0, help="longest run before a kill, seconds")
    p.add_argument(
        "--up-from",
        choices=["start", "work"],
        default="start",
        help="count the time before each kill from the process start (default) or from the "
        "moment the run works on a micro-batch (kills land in batches however slow start-up is)",
    )
    p.add_argument("--seed", type=int, default=1, help="same seed, same events and kills")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="an empty directory for the run's files (pipeline file, checkpoint, ClickHouse "
        "data, each run's log), kept afterwards (default: a temporary one, removed)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streamsift_bench.chaos import ChaosOptions, run_chaos

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="streamsift-chaos-"))
    try:
        report = run_chaos(
            ChaosOptions(
                kills=args.kills,
                events=args.events,
                mode=args.mode,
                min_up_s=args.min_up,
                max_up_s=args.max_up,
                seed=args.seed,
                work_dir=work,
                shape=args.shape,
                join_type=args.join_type,
                join_mode=args.join_mode,
                users=args.users,
                up_from=args.up_from,
            ),
            log=lambda line: print(line, file=sys.stderr),
        )
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report.as_dict()) if args.json else report.table())
    return 0 if report.ok else 1
