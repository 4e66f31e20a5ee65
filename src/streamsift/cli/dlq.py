"""`streamsift dlq`: inspect, consume, purge and replay a pipeline's dead letters.

Every sub-command takes the pipeline file and reads the DLQ table it names (same ClickHouse
connection as the sink). Exit codes: 0 done, 1 failed (ClickHouse, missing DLQ, declined
purge), 2 bad usage or pipeline file (including one replay cannot handle).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamsift.cli.output import fail
from streamsift.config.models import Pipeline

if TYPE_CHECKING:  # ClickHouse client and pyarrow load only when a dlq command runs
    from streamsift.engine.dead_letters import ClassCount, DeadLetter, DeadLetters, DlqTotals

SHOW_PAYLOAD_CHARS = 2000
Command = Callable[[argparse.Namespace, Pipeline, "DeadLetters"], int]


def register(subparsers: Any) -> None:
    """Add `dlq` and its sub-commands to the `streamsift` parser."""
    p = subparsers.add_parser(
        "dlq",
        help="inspect, consume, purge and replay a pipeline's dead letters",
        description="Dead letters are records the pipeline could not parse or write, kept "
        "with their payload, Kafka position and error. 'pending' ones are neither consumed "
        "nor replayed yet.",
    )
    sub = p.add_subparsers(dest="dlq_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "file", type=Path, metavar="PIPELINE_FILE", help="the pipeline whose dead letters to use"
    )
    common.add_argument("--verbose", action="store_true", help="debug logging")

    s = sub.add_parser(
        "stats", parents=[common], help="counts by stage and error class: pending vs handled"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=_command(cmd_stats), logs=True)

    s = sub.add_parser("show", parents=[common], help="show pending dead letters (oldest first)")
    s.add_argument("-n", type=_positive, default=10, help="how many (default 10)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_command(cmd_show), logs=True)

    s = sub.add_parser(
        "consume",
        parents=[common],
        help="show pending dead letters and mark them handled (not shown again)",
    )
    s.add_argument("-n", type=_positive, default=10, help="how many (default 10)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_command(cmd_consume), logs=True)

    s = sub.add_parser(
        "purge", parents=[common], help="delete all dead letters, pending and handled"
    )
    s.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    s.set_defaults(func=_command(cmd_purge), logs=True)

    s = sub.add_parser(
        "replay",
        parents=[common],
        help="re-process pending dead letters with the pipeline's current schema and mapping",
        description="Records that now parse (and that ClickHouse accepts) are written into "
        "the table and marked replayed; the others stay pending with their new error. "
        "Replayed records bypass dedup. Safe to re-run after a crash: nothing is inserted twice.",
    )
    s.add_argument("-n", "--limit", type=_positive, help="replay at most this many records")
    s.add_argument(
        "--chunk-size", type=_positive, help="records per insert (default sink.max_batch_size)"
    )
    s.add_argument("--dry-run", action="store_true", help="count what would happen; write nothing")
    s.add_argument("--json", action="store_true", help="print the report as one JSON object")
    s.set_defaults(func=_command(cmd_replay), logs=True)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _command(run: Command) -> Callable[[argparse.Namespace], int]:
    """Load the pipeline and open its dead letters; errors reach `main` with their hints."""

    def func(args: argparse.Namespace) -> int:
        from streamsift.engine.dead_letters import open_dead_letters
        from streamsift.engine.registry_fields import load_resolved

        pipeline = load_resolved(args.file)
        with open_dead_letters(pipeline) as letters:
            return run(args, pipeline, letters)

    return func


# ---------------------------------------------------------------------------- commands


def cmd_stats(args: argparse.Namespace, pipeline: Pipeline, store: DeadLetters) -> int:
    counts, totals = store.stats()
    if args.json:
        print(
            json.dumps(
                {
                    "pipeline": pipeline.name,
                    "table": store.table,
                    "total": totals.total,
                    **dataclasses.asdict(totals),
                    "by_class": [
                        {
                            "stage": c.stage,
                            "error_class": c.error_class,
                            "pending": c.pending,
                            "consumed": c.consumed,
                            "replayed": c.replayed,
                            "replaying": c.replaying,
                        }
                        for c in counts
                    ],
                },
                sort_keys=True,
            )
        )
        return 0
    print(f"dead letters of {pipeline.name} in {store.where()}")
    print("\n".join(_stats_table(counts, totals)))
    if totals.replaying:
        print(
            f"{totals.replaying:,} record(s) belong to an interrupted replay: "
            f"run `streamsift dlq replay {args.file}` to finish it"
        )
    return 0


def _stats_table(counts: list[ClassCount], totals: DlqTotals) -> list[str]:
    rows = [("stage", "error_class", "pending", "consumed", "replayed")]
    rows += [
        (c.stage, c.error_class, f"{c.pending:,}", f"{c.consumed:,}", f"{c.replayed:,}")
        for c in counts
    ]
    rows.append(
        (
            "total",
            "",
            f"{totals.pending:,}",
            f"{totals.consumed:,}",
            f"{totals.replayed:,}",
        )
    )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(r)
        ).rstrip()
        for r in rows
    ]


def cmd_show(args: argparse.Namespace, pipeline: Pipeline, store: DeadLetters) -> int:
    letters = store.pending(args.n)
    _print_letters(letters, args.json)
    if not args.json:
        total = store.pending_count()
        if not letters:
            print(f"no pending dead letters in {store.where()}", file=sys.stderr)
        else:
            print(f"{len(letters):,} of {total:,} pending shown", file=sys.stderr)
    return 0


def cmd_consume(args: argparse.Namespace, pipeline: Pipeline, store: DeadLetters) -> int:
    def show(letters: list[DeadLetter]) -> None:
        _print_letters(letters, args.json)
        sys.stdout.flush()

    letters = store.consume(args.n, show)
    if not letters:
        print(f"no pending dead letters in {store.where()}", file=sys.stderr)
        return 0
    print(f"marked {len(letters):,} dead letter(s) as handled", file=sys.stderr)
    return 0


def cmd_purge(args: argparse.Namespace, pipeline: Pipeline, store: DeadLetters) -> int:
    total = store.count()
    if total == 0:
        print(f"nothing to purge: {store.where()} is empty")
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            return fail(
                f"refusing to delete {total:,} dead letter(s) without confirmation "
                "(no terminal to ask on)",
                f"run `streamsift dlq purge {args.file} --yes` to delete them",
                code=2,
            )
        pending = store.pending_count()
        sys.stderr.write(
            f"delete all {total:,} dead letters ({pending:,} pending) of {pipeline.name} "
            f"from {store.where()}? [y/N] "
        )
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("aborted: nothing deleted", file=sys.stderr)
            return 1
    purged = store.purge()
    print(f"purged {purged:,} dead letter(s) from {store.table}")
    return 0


def cmd_replay(args: argparse.Namespace, pipeline: Pipeline, store: DeadLetters) -> int:
    if not args.json:
        print(
            f"{'dry run: ' if args.dry_run else ''}replaying pending dead letters of "
            f"{pipeline.name} from {store.table} into {pipeline.sink.table} with the current "
            "schema and mapping",
            file=sys.stderr,
        )
    report = store.replay(limit=args.limit, dry_run=args.dry_run, chunk_size=args.chunk_size)
    if args.json:
        print(json.dumps(report.as_dict(), sort_keys=True))
        return 0
    if report.resumed_chunks:
        print(f"finished {report.resumed_chunks} chunk(s) of an interrupted replay")
    if args.dry_run:
        print(
            f"would replay {report.replayed:,} record(s) into {pipeline.sink.table}; "
            f"{report.still_failing:,} would still fail"
        )
    else:
        print(
            f"replayed {report.replayed:,} record(s) into {pipeline.sink.table}; "
            f"{report.still_failing:,} still failing (pending in {store.table})"
        )
    for (stage, error_class), n in sorted(report.failures.items()):
        print(f"  {stage:<6} {error_class:<20} {n:>8,}")
    return 0


# ---------------------------------------------------------------------------- output


def _print_letters(letters: list[DeadLetter], as_json: bool) -> None:
    for letter in letters:
        if as_json:
            print(json.dumps(letter_json(letter), sort_keys=True))
        else:
            print(letter_text(letter))


def letter_json(letter: DeadLetter) -> dict[str, Any]:
    """A dead letter as JSON: bytes as text when UTF-8, else as `<name>_base64`."""
    out: dict[str, Any] = {
        "topic": letter.topic,
        "partition": letter.partition,
        "offset": letter.offset,
        "kafka_timestamp": _iso(letter.kafka_timestamp_ms),
        "failed_at": _iso(letter.failed_at_ms),
        "stage": letter.stage,
        "error_class": letter.error_class,
        "error": letter.error,
        "replay_attempts": letter.attempts,
    }
    for name, value in (("key", letter.key), ("payload", letter.payload)):
        try:
            out[name] = None if value is None else value.decode("utf-8")
        except UnicodeDecodeError:
            out[name] = None
            out[f"{name}_base64"] = base64.b64encode(value).decode()
    if letter.attempts:
        out["first_failure"] = {
            "stage": letter.origin,
            "error_class": letter.origin_error_class,
            "error": letter.origin_error,
        }
    return out


def letter_text(letter: DeadLetter) -> str:
    head = (
        f"{letter.topic}/{letter.partition}@{letter.offset}  {letter.stage}/{letter.error_class}"
        f"  failed {_iso(letter.failed_at_ms)}"
    )
    if letter.attempts:
        head += f"  (replayed {letter.attempts}x, still failing)"
    lines = [head, f"  error:   {letter.error}"]
    if letter.key is not None:
        lines.append(f"  key:     {_printable(letter.key)}")
    lines.append(f"  payload: {_printable(letter.payload)}")
    return "\n".join(lines)


def _printable(value: bytes) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = repr(value)
    if len(text) > SHOW_PAYLOAD_CHARS:
        text = f"{text[:SHOW_PAYLOAD_CHARS]}... ({len(value):,} bytes; --json shows all)"
    return text


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    at = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
