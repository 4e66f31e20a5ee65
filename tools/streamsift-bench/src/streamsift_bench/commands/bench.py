"""`streamsift bench`: scenarios and baselines on the bundled broker and embedded ClickHouse."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from streamsift.cli.output import fail
from streamsift_bench.options import BASELINES, DEFAULT_BASELINES


def _rates(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(float(x)) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of rates"
        ) from None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench",
        help="benchmark streamsift against baselines and write results.json, report.md and plots",
        description=(
            "Starts the bundled broker, loads a backlog with the load generator and drains it with "
            "streamsift (ingest, dedup, dedup-join: dedup on two topics + inner join) and with "
            "baselines (raw consumer, quixstreams, ClickHouse FINAL), each checked exact against "
            "the generator's truth; then runs the ingest and dedup scenarios live at fixed rates "
            "(latency) and on a stepped ramp (sustained rate)."
        ),
    )
    p.add_argument(
        "--scenario",
        choices=["ingest", "dedup", "dedup-join", "all", "soak", "large-drain", "formats"],
        default="all",
        help="dedup-join: the events and a profile stream, each deduplicated, inner-joined on "
        "the user id (backlog drain only); soak: only a long dedup run at --soak-rate for "
        "--soak-seconds (memory over time); large-drain: only the large dedup drain "
        "(--drain-events, default 2,000,000); formats: only the decode speed of JSON, Avro and "
        "Protobuf on the same --events (the parse step alone, one core, best of --rounds)",
    )
    p.add_argument("--rounds", type=int, default=3, help="formats: parses per format (best kept)")
    p.add_argument("--events", type=int, default=200_000, help="backlog size for the drain runs")
    p.add_argument(
        "--drain-events",
        type=int,
        default=None,
        help="also drain a second backlog of this many events (e.g. 2000000) with streamsift "
        "dedup, the raw consumer and quixstreams, so the steady rate is not mostly warm-up "
        "(streamsift admits its default micro-batch size, or --max-rows-per-batch)",
    )
    p.add_argument("--out", type=Path, default=Path(".streamsift/bench"), help="output directory")
    p.add_argument(
        "--duration",
        type=float,
        default=15.0,
        help="seconds per fixed-rate step of the live runs (default 15)",
    )
    p.add_argument(
        "--latency-rates", type=_rates, default=(1_000, 5_000, 20_000), help="e.g. 1000,5000,20000"
    )
    p.add_argument(
        "--ramp",
        type=_rates,
        default=(2_500, 5_000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 80_000),
        help="ramp steps in events/s; stops at the first one not sustained",
    )
    p.add_argument("--no-live", action="store_true", help="drain runs only")
    p.add_argument(
        "--live-scenarios",
        help="comma-separated scenarios to run live (default: the same as --scenario)",
    )
    p.add_argument(
        "--baselines",
        default=",".join(DEFAULT_BASELINES),
        help=f"comma-separated subset of {','.join(BASELINES)} ('' for none; the *_ingest ones "
        "run with the ingest scenario, raw_join with dedup-join; raw and raw_ingest are the "
        "old names of raw_naive and raw_naive_ingest)",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=2,
        help="run every drain this many times, alternating (A B A B): each ratio is the median "
        "of its pairs, with their spread; > 20%% apart marks it unstable (default 2)",
    )
    p.add_argument(
        "--readme",
        type=Path,
        metavar="README.md",
        help="do not run: rewrite the bench block of this file from --results (readme.py)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=Path("docs/benchmarks/results.json"),
        help="with --readme: the results.json the figures come from",
    )
    p.add_argument(
        "--join-events",
        type=int,
        help="dedup-join: profile messages in the right topic (default --events / 10)",
    )
    p.add_argument(
        "--join-window",
        default="30s,60s",
        help="dedup-join: LEFT[,RIGHT] join windows (default 30s,60s: a profile at tr joins an "
        "event at tl when tl - 60s <= tr <= tl + 30s)",
    )
    p.add_argument(
        "--join-mode",
        choices=("interval", "latest"),
        default="interval",
        help="dedup-join: the join's mode (interval: every pair in the windows; latest: one "
        "row per event, with the profile version current at its time)",
    )
    p.add_argument("--soak-rate", type=int, default=10_500, help="events/s of the soak")
    p.add_argument(
        "--soak-seconds", type=float, default=600.0, help="how long the memory soak runs"
    )
    p.add_argument("--soak-window", default="7d", help="dedup window of the soak")
    p.add_argument(
        "--soak-linger-ms",
        type=int,
        help="the soak's producer linger.ms (default 500: fewer, larger batches, as the bundled "
        "broker's cost per fetch grows with the number of batches in a partition)",
    )
    p.add_argument("--partitions", type=int, default=3, help="partitions of the bench topics")
    p.add_argument("--duplicates", type=float, default=0.2, help="share of re-sends")
    p.add_argument("--payload-bytes", type=int, default=1024, help="pad events to this size")
    p.add_argument("--seed", type=int, default=7, help="same seed, same events")
    p.add_argument(
        "--max-rows-per-batch", type=int, default=None, help="streamsift's admission limit"
    )
    p.add_argument(
        "--max-delay",
        default="500ms",
        help="streamsift's sink.max_delay_time (the trigger interval of the live runs; default "
        "500ms, the pipeline default)",
    )
    p.add_argument(
        "--state-store",
        choices=["rocksdb", "memory"],
        default="rocksdb",
        help="streamsift's runtime.state_store: where Spark keeps the join's state",
    )
    p.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for every streamsift run (its runtime.spark_conf; repeatable), "
        "e.g. spark.sql.streaming.join.stateFormatVersion=2 to measure a lever's effect",
    )
    p.add_argument("--bootstrap-servers", help="use this Kafka instead of the bundled broker")
    p.add_argument(
        "--clickhouse",
        choices=["embedded", "server"],
        default="embedded",
        help="streamsift runs write to chdb in their own process (embedded, driver-side "
        "inserts) or to a chdb-backed ClickHouse HTTP endpoint each run starts as a separate "
        "process (server, executor-side inserts); baselines stay embedded",
    )
    p.add_argument(
        "--master",
        default=None,
        help="a Spark cluster (spark://host:port): drain the dedup backlog there on one "
        "executor core, then on two, against a ClickHouse server endpoint (implies "
        "--clickhouse server; other scenarios, baselines and live runs are skipped)",
    )
    p.add_argument("--keep-work", action="store_true", help="keep chdb dirs and checkpoints")
    p.add_argument(
        "--profile",
        action="store_true",
        help="sample every streamsift run with py-spy (Python) and JFR (JVM) into "
        "<out>/profiles/, summarised per run in <run>-hot.md (sampling costs CPU: rates are "
        "not comparable with an unprofiled run's)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--note", default="", help="a remark printed in the report")
    p.set_defaults(func=cmd_bench, logs=False)


def cmd_bench(args: argparse.Namespace) -> int:
    from streamsift_bench.runner import Bench

    if args.readme is not None:
        return _readme(args)
    if args.scenario == "formats":
        return _formats(args)
    try:
        opts = bench_options(args)
    except ValueError as exc:
        return fail(str(exc), code=2)

    def log(msg: str) -> None:
        print(time.strftime("%H:%M:%S ") + msg, file=sys.stderr, flush=True)

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # unwinds through the runner: broker and workers are stopped

    signal.signal(signal.SIGTERM, stop)
    results = Bench(opts, log=log).run()
    out = Path(args.out)
    print(f"report: {out / 'report.md'}\nresults: {out / 'results.json'}")
    for name in results.get("plots", []):
        print(f"plot: {out / name}")
    if not results.get("all_exact"):
        print("FAILED: at least one run did not match the generator's truth", file=sys.stderr)
        return 1
    return 0


def _readme(args: argparse.Namespace) -> int:
    """`--readme`: the README's bench block rewritten from a results.json."""
    from streamsift_bench.readme import ReadmeError, update_readme

    try:
        changed = update_readme(args.readme, args.results)
    except ReadmeError as exc:
        return fail(str(exc), code=2)
    print(f"{args.readme}: {'updated' if changed else 'already current'} from {args.results}")
    return 0


def _formats(args: argparse.Namespace) -> int:
    """`--scenario formats`: decode speed only (no broker, no Spark)."""
    from streamsift_bench.formats import bench_formats

    if args.events <= 0 or args.rounds <= 0:
        return fail("--events and --rounds must be positive", code=2)
    results = bench_formats(
        Path(args.out),
        args.events,
        args.rounds,
        command="streamsift " + shlex.join(sys.argv[1:]),
        log=lambda msg: print(time.strftime("%H:%M:%S ") + msg, file=sys.stderr, flush=True),
    )
    for fmt, f in results["formats"]["formats"].items():
        print(
            f"{fmt:<9} {f['events_per_s']:>10,} events/s {f['events_per_cpu_s']:>10,} "
            f"events/CPU-s  x{f['cpu_ratio_to_json']:.3f} of JSON  exact: {f['exact']}"
        )
    print(f"report: {Path(args.out) / 'report.md'}\nresults: {Path(args.out) / 'results.json'}")
    if not results["all_exact"]:
        print("FAILED: a format did not parse into the same rows as JSON", file=sys.stderr)
        return 1
    return 0


def bench_options(args: argparse.Namespace) -> Any:
    """The parsed command line as BenchOptions; ValueError names a bad option."""
    from streamsift.config.durations import format_duration, parse_duration
    from streamsift_bench.commands.loadgen import join_windows
    from streamsift_bench.large_drain import LARGE_DRAIN_EVENTS
    from streamsift_bench.options import (
        BASELINE_ALIASES,
        BASELINES,
        LIVE_SCENARIOS,
        SCENARIOS,
        BenchOptions,
    )

    baselines = tuple(
        dict.fromkeys(
            BASELINE_ALIASES.get(b.strip(), b.strip())
            for b in args.baselines.split(",")
            if b.strip()
        )
    )
    if args.pairs < 1:
        raise ValueError("--pairs must be at least 1")
    unknown = sorted(set(baselines) - set(BASELINES))
    if unknown:
        raise ValueError(f"unknown baseline(s) {', '.join(unknown)}; use {', '.join(BASELINES)}")
    live_scenarios = None
    if args.live_scenarios is not None:
        live_scenarios = tuple(x.strip() for x in args.live_scenarios.split(",") if x.strip())
        if set(live_scenarios) - set(LIVE_SCENARIOS):
            raise ValueError(f"--live-scenarios takes {', '.join(LIVE_SCENARIOS)}")
    if args.events <= 0 or args.partitions <= 0 or args.duration <= 0:
        raise ValueError("--events, --partitions and --duration must be positive")
    drain_events = args.drain_events
    if drain_events is None:
        drain_events = LARGE_DRAIN_EVENTS if args.scenario == "large-drain" else 0
    if drain_events < 0 or (args.scenario == "large-drain" and drain_events == 0):
        raise ValueError("--drain-events must be positive")
    if args.soak_linger_ms is not None and args.soak_linger_ms < 0:
        raise ValueError("--soak-linger-ms must not be negative")
    if args.join_events is not None and args.join_events < 0:
        raise ValueError("--join-events must not be negative")
    max_delay = parse_duration(args.max_delay)
    if max_delay.total_seconds() <= 0:
        raise ValueError(f"--max-delay must be positive, got {args.max_delay!r}")
    left_window, right_window = join_windows(args.join_window)
    if min(left_window.total_seconds(), right_window.total_seconds()) <= 0:
        raise ValueError("--join-window: windows must be positive")
    spark_conf = {}
    for item in args.spark_conf:
        key, eq, value = item.partition("=")
        if not eq or not key.strip().startswith("spark."):
            raise ValueError(f"--spark-conf {item!r}: give KEY=VALUE with a key starting spark.")
        spark_conf[key.strip()] = value.strip()
    scenario, live = args.scenario, not args.no_live
    if args.master:  # the cluster comparison only (see --master)
        baselines, live_scenarios, live, scenario = (), (), False, "dedup"
    return BenchOptions(
        scenarios={"all": SCENARIOS, "soak": (), "large-drain": ()}.get(scenario, (scenario,)),
        drain_events=drain_events if scenario != "soak" else 0,
        soak_rate=args.soak_rate if scenario == "soak" else 0,
        soak_seconds=args.soak_seconds,
        soak_window=args.soak_window,
        **({} if args.soak_linger_ms is None else {"soak_linger_ms": args.soak_linger_ms}),
        baselines=baselines,
        pairs=args.pairs,
        events=args.events,
        out=args.out,
        partitions=args.partitions,
        duplicates=args.duplicates,
        payload_bytes=args.payload_bytes,
        seed=args.seed,
        join_events=args.join_events,
        join_left_window=format_duration(left_window),
        join_right_window=format_duration(right_window),
        join_mode=args.join_mode,
        live=live,
        live_scenarios=live_scenarios,
        latency_rates=args.latency_rates,
        ramp_rates=args.ramp,
        step_seconds=args.duration,
        max_rows_per_batch=args.max_rows_per_batch,
        max_delay=format_duration(max_delay),
        state_store=args.state_store,
        spark_conf=spark_conf,
        bootstrap_servers=args.bootstrap_servers,
        clickhouse="server" if args.master else args.clickhouse,
        master=args.master,
        keep_work=args.keep_work,
        profile=args.profile,
        plots=not args.no_plots,
        note=args.note,
        command="streamsift " + shlex.join(sys.argv[1:]),
    )
