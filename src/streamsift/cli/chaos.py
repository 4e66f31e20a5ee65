"""`streamsift chaos`: the kill -9 harness (see streamsift.testing.chaos)."""

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
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--events", type=int, default=60_000)
    p.add_argument("--mode", choices=["embedded", "server"], default="embedded")
    p.add_argument("--min-up", type=float, default=4.0, help="shortest run before a kill, seconds")
    p.add_argument("--max-up", type=float, default=25.0, help="longest run before a kill, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streamsift.testing.chaos import ChaosOptions, run_chaos

    work = Path(tempfile.mkdtemp(prefix="streamsift-chaos-"))
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
            ),
            log=lambda line: print(line, file=sys.stderr),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report.as_dict()) if args.json else report.table())
    return 0 if report.ok else 1
