"""`streamsift`: validate, run, demo and import pipelines."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from streamsift import __version__
from streamsift.cli import dlq, exit_codes, package_env, serve
from streamsift.cli.output import StatusLine, fail, setup_logging
from streamsift.config import Pipeline, read_document
from streamsift.engine.signals import ABORT_EXIT_CODE, AbortRequested, install_stop_handlers
from streamsift.errors import ConfigurationError, StreamsiftError

COMMANDS_GROUP = "streamsift.commands"
PIPELINE_FILE_HELP = "pipeline file: streamsift YAML/JSON, or GlassFlow pipeline JSON (v1-v3)"
DUPLICATES_RANGE = "from 0 up to, not including, 1"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamsift",
        description="Exactly-once streaming ETL from Kafka to ClickHouse: dedup, joins, DLQ.",
    )
    parser.add_argument("--version", action="version", version=f"streamsift {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check a pipeline file and print 'ok' or its errors")
    p.add_argument("file", type=Path, help=PIPELINE_FILE_HELP)
    p.set_defaults(func=cmd_validate, logs=False)

    p = sub.add_parser("run", help="run a pipeline until Ctrl-C/SIGTERM (or until caught up)")
    p.add_argument("file", type=Path, help=PIPELINE_FILE_HELP)
    p.add_argument(
        "--until-caught-up", action="store_true", help="process what is in the topic now, then exit"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".streamsift"),
        help="where checkpoints live (default .streamsift)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="P",
        help="serve Prometheus metrics at http://HOST:P/metrics while running (0: a free port)",
    )
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the metrics server (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    p.add_argument(
        "--master",
        default=None,
        help="Spark master, e.g. spark://host:7077 (default: $STREAMSIFT_SPARK_MASTER, else "
        "runtime.master, else local[2])",
    )
    p.add_argument("--verbose", action="store_true", help="show Spark's own log")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo", help="run a dedup pipeline on the bundled broker and embedded ClickHouse"
    )
    p.add_argument("--events", type=int, default=10_000, help="how many events to produce")
    p.add_argument(
        "--duplicates",
        type=float,
        default=0.2,
        help=f"share of events that are re-sends ({DUPLICATES_RANGE}, default 0.2)",
    )
    p.add_argument(
        "--keys", type=int, default=1_000, help="how many distinct ids the duplicates repeat"
    )
    p.add_argument("--partitions", type=int, default=3, help="partitions of the demo topic")
    p.add_argument("--seed", type=int, default=7, help="same seed, same events")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep the demo's data here (default: a temp dir)",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--verbose", action="store_true", help="show Spark's own log")
    p.add_argument(
        "--join",
        action="store_true",
        help="join demo instead: orders (--events) with the profile events of --keys users, "
        "dedup on both sides, expected vs actual joined rows",
    )
    p.add_argument(
        "--join-type", choices=["inner", "left"], default=None, help="with --join (default inner)"
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("import", help="convert another tool's pipeline file to streamsift's format")
    p.add_argument("format", choices=["glassflow"], help="the other tool's format")
    p.add_argument("file", type=Path, help="the pipeline file to convert (JSON)")
    p.add_argument("-o", "--output", type=Path, help="write the YAML here instead of stdout")
    p.set_defaults(func=cmd_import, logs=False)

    # Further commands live in their own modules, each with register(subparsers) that adds a
    # parser and sets `func` (and `logs=False` for commands that need no log setup).
    dlq.register(sub)
    serve.register(sub)
    package_env.register(sub)
    # The bench and load tools (`bench`, `loadgen`, `chaos`) are a distribution of their own
    # (tools/streamsift-bench); installed, they add their commands the same way.
    for command in entry_points(group=COMMANDS_GROUP):
        command.load().register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "logs", True):
            setup_logging(getattr(args, "verbose", False))
        return int(args.func(args))
    except StreamsiftError as exc:
        return exit_codes.report(exc)
    except KeyboardInterrupt:
        return ABORT_EXIT_CODE
    except AbortRequested:
        # A second Ctrl-C/SIGTERM (its line is already out): leave now. os._exit skips waiting
        # for Spark's threads; the JVM ends with this process, and the checkpoint holds only
        # committed micro-batches, so the next run redoes the one in flight.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(ABORT_EXIT_CODE)


def cmd_validate(args: argparse.Namespace) -> int:
    from streamsift.config.summary import registry_schemas, summary  # pydantic on demand
    from streamsift.engine.registry_fields import load_resolved

    pipeline = load_resolved(args.file)
    print(f"ok: {pipeline.name}: {summary(pipeline)}")
    for line in registry_schemas(pipeline):
        print(line)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from streamsift.config.glassflow import glassflow_to_yaml
    from streamsift.engine.registry_fields import glassflow_with_registry_fields

    text = glassflow_to_yaml(glassflow_with_registry_fields(read_document(args.file)))
    if args.output:
        args.output.write_text(text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from streamsift.engine.registry_fields import load_resolved
    from streamsift.engine.runner import PipelineRunner

    pipeline = load_resolved(args.file)
    with contextlib.ExitStack() as stack:
        pipeline = otlp_receiver(stack, pipeline, args.data_dir)
        status = StatusLine()
        stack.callback(status.close)
        runner = PipelineRunner(
            pipeline,
            base_dir=args.data_dir,
            verbose=args.verbose,
            on_progress=status,
            master=args.master,
        )
        install_stop_handlers(runner.stop)
        print(
            f"running {pipeline.name}: {pipeline.primary_source.topic} -> "
            f"{runner.describe_sink()} table {pipeline.sink.table} on {runner.master} "
            f"(checkpoint {runner.checkpoint})",
            file=sys.stderr,
        )
        if args.metrics_port is not None:
            stack.callback(_serve_metrics(runner, args))
        result = runner.run(until_caught_up=args.until_caught_up)
    if result.note:
        print(result.note, file=sys.stderr)
    print(done_line(result.stats))
    return 0


def done_line(s: dict[str, Any]) -> str:
    """The run's counts as `streamsift run` ends: every record read is written, dropped as a
    duplicate, a dead letter, or (when the pipeline has them) filtered out or behind the
    join's watermark."""
    line = (
        f"done: read {s['read']:,}, written {s['written']:,}, duplicates dropped "
        f"{s['duplicates']:,}, DLQ {s['dlq']:,}, late {s['late']:,}"
    )
    if s.get("filtered"):
        line += f", filtered {s['filtered']:,}"
    if s.get("late_dropped"):
        line += f", behind the join watermark {s['late_dropped']:,}"
    return line


def otlp_receiver(stack: contextlib.ExitStack, pipeline: Pipeline, data_dir: Path) -> Pipeline:
    """For an OTLP pipeline: the bundled broker when the source names no Kafka, and the
    receiver, listening until the run ends. Returns the pipeline as it will run."""
    from streamsift.service.otlp_receiver import otlp_source, receiver_for_run, with_bootstrap

    src = otlp_source(pipeline)
    if src is None:
        return pipeline
    if src.bundled:
        from streamsift.embedded.broker import Broker

        data_dir.mkdir(parents=True, exist_ok=True)
        broker = stack.enter_context(Broker(log_path=data_dir / "bundled-broker.log"))
        pipeline = with_bootstrap(pipeline, broker.bootstrap_servers)
        print(
            f"bundled Kafka broker on {broker.bootstrap_servers} (in memory: records not yet "
            "in ClickHouse are lost if this process ends; name a Kafka in source.bootstrap_servers "
            "to keep them)",
            file=sys.stderr,
        )
    receiver = stack.enter_context(receiver_for_run(pipeline, data_dir))
    assert receiver is not None
    print(
        f"OTLP receiver for {src.signal.value}: "
        + ", ".join(
            f"{name} on {src.receiver.host}:{port}"
            for name, port in (("http", receiver.http_port), ("grpc", receiver.grpc_port))
            if port is not None
        ),
        file=sys.stderr,
        flush=True,
    )
    return pipeline


def _serve_metrics(runner: Any, args: argparse.Namespace) -> Any:
    """Start the run's metrics server; one line says where. Returns its stop function."""
    from datetime import datetime, timezone

    from streamsift.service.metrics import RunnerCollector, serve_metrics

    if not 0 <= args.metrics_port <= 65535:
        raise ConfigurationError(
            f"--metrics-port must be a port number (0-65535), not {args.metrics_port}"
        )
    collector = RunnerCollector(runner, datetime.now(timezone.utc).isoformat())
    try:
        port, stop = serve_metrics(collector, args.metrics_host, args.metrics_port)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {exc.strerror}",
            "pick another --metrics-port (0 picks a free one)",
        ) from None
    print(f"metrics on http://{args.metrics_host}:{port}/metrics", file=sys.stderr)
    return stop


def cmd_demo(args: argparse.Namespace) -> int:
    """`streamsift demo [--join]`: both demos take the same arguments, checked here."""
    if args.join_type is not None and not args.join:
        return fail("--join-type goes with --join", code=2)
    if not 0 <= args.duplicates < 1:
        return fail(f"--duplicates must be a share {DUPLICATES_RANGE}, e.g. 0.2", code=2)
    if args.events <= 0 or args.keys <= 0 or args.partitions <= 0:
        return fail("--events, --keys and --partitions must be positive", code=2)
    if args.join:
        from streamsift.cli.demo_join import cmd_demo_join

        return cmd_demo_join(args)
    from streamsift.cli.demo import cmd_demo_dedup

    return cmd_demo_dedup(args)


def entry() -> None:
    """The `streamsift` command: `main`, then an exit no late stop signal can cut short (a
    second Ctrl-C that lands after the run has ended would otherwise kill the process while
    Python shuts down, as by the signal, instead of the run's own exit code)."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    entry()
