"""The bench's large dedup drain (`--drain-events`, `--scenario large-drain`) and its
`--spark-conf` option, without a broker: command line, worker spec and report."""

from __future__ import annotations

import pytest

from streamsift.cli.main import build_parser
from streamsift.config import parse_pipeline
from streamsift_bench.commands.bench import bench_options
from streamsift_bench.measures import drain_rates
from streamsift_bench.report import markdown
from streamsift_bench.run_setup import pipeline_doc
from streamsift_bench.verdicts import ratios, targets


def _opts(*argv: str):
    return bench_options(build_parser().parse_args(["bench", *argv]))


def test_all_keeps_its_runs_and_adds_the_large_drain_only_when_asked():
    plain = _opts("--scenario", "all", "--events", "200000")
    assert plain.scenarios == ("ingest", "dedup", "dedup-join") and plain.events == 200_000
    assert plain.drain_events == 0 and plain.live
    both = _opts("--scenario", "all", "--events", "200000", "--drain-events", "2000000")
    assert both.scenarios == plain.scenarios and both.drain_events == 2_000_000


def test_the_large_drain_alone_defaults_to_two_million_events():
    alone = _opts("--scenario", "large-drain")
    assert alone.scenarios == () and alone.drain_events == 2_000_000
    assert _opts("--scenario", "large-drain", "--drain-events", "500000").drain_events == 500_000
    assert _opts("--scenario", "soak", "--drain-events", "5").drain_events == 0
    for bad in (["--scenario", "large-drain", "--drain-events", "0"], ["--drain-events", "-1"]):
        with pytest.raises(ValueError, match="--drain-events must be positive"):
            _opts(*bad)


def test_spark_conf_reaches_every_streamsift_run_and_bad_ones_are_refused():
    opts = _opts(
        "--spark-conf",
        "spark.sql.streaming.join.stateFormatVersion=2",
        "--spark-conf",
        "spark.sql.shuffle.partitions = 1",
    )
    assert opts.spark_conf == {
        "spark.sql.streaming.join.stateFormatVersion": "2",
        "spark.sql.shuffle.partitions": "1",
    }
    spec = {
        "name": "drain-dedup-abc",
        "bootstrap_servers": "127.0.0.1:9092",
        "topic": "t",
        "work_dir": "/tmp/streamsift-bench-test",
        "dedup": True,
        "spark_conf": opts.spark_conf,
    }
    assert parse_pipeline(pipeline_doc(spec)).runtime.spark_conf == opts.spark_conf
    for bad in ("stateFormatVersion=2", "spark.sql.shuffle.partitions"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            _opts("--spark-conf", bad)


def _run(kind: str, busy: float, wall: float, exact: bool = True, **more) -> dict:
    run = {
        "exact": exact,
        "events": 2_000_000,
        "read": 2_000_000,
        "rows": 1_600_000 if exact else 1_599_999,
        "expected_rows": 1_600_000,
        "wall_seconds": wall,
        ("busy_seconds" if kind == "streamsift" else "processing_seconds"): busy,
        **more,
    }
    run["rates"] = drain_rates(kind, run)
    return run


def _results(quix_exact: bool = True) -> dict:
    return {
        "started_at": "now",
        "options": {"payload_bytes": 1024, "partitions": 3, "duplicates": 0.2, "keys": 10},
        "machine": {"cores": 2, "cpu": "", "memory_gb": 1, "python": "3", "versions": {}},
        "dataset_large": {
            "produced": 2_000_000,
            "duplicates": 400_000,
            "expected_unique": 1_600_000,
            "producer": {"achieved_rps": 40_000},
            "broker_rss_mb": 2_500,
        },
        "drain": {
            "raw_naive-large": _run("raw", 40.0, 45.0, after_first_batch_rate=50_000.0),
            "quix-large": _run("quix", 80.0, 100.0, exact=quix_exact),
            "dedup-large": _run(
                "streamsift", 50.0, 62.5, batches=10, after_first_batch_rate=45_000.0
            ),
        },
        "live": {},
    }


def test_the_large_drain_is_compared_with_its_own_baselines_and_reported():
    results = _results()
    found = {(r["ours"], r["baseline"]): r for r in ratios(results)}
    assert found[("dedup-large", "raw_naive-large")]["processing_rate"] == 0.8  # 40k / 50k
    # steady over steady (issue 30): 45,000 / 50,000, never over the baseline's processing rate
    assert found[("dedup-large", "raw_naive-large")]["steady_rate"] == 0.9
    assert found[("dedup-large", "quix-large")]["processing_rate"] == 1.6  # 40,000 / 25,000
    assert found[("dedup-large", "quix-large")]["wall_rate"] == 1.6  # 32,000 / 20,000
    results["ratios"], results["targets"] = found.values(), targets(results)
    wall = next(t for t in results["targets"] if t["target"].startswith("large drain"))
    assert wall["measured"] == 1.6 and wall["met"] is True
    text = markdown({**results, "ratios": list(found.values())})
    assert "large drain: streamsift dedup (1h window)" in text
    assert "a second backlog of 2,000,000 events" in text and "2,500 MB RSS" in text
    assert "as a pipeline does by default here (10 micro-batches)" in text
    assert "large drain: dedup / quixstreams | 1.60 |" in text
    assert "see the large drain below for its micro-batches" in text  # no 200k drain here


def test_a_failed_large_baseline_gives_the_wall_target_no_number():
    results = _results(quix_exact=False)
    wall = next(t for t in targets(results) if t["target"].startswith("large drain"))
    assert wall["measured"] is None and wall["met"] is None and "FAILED" in wall["note"]
    del results["drain"]["dedup-large"]
    assert not [t for t in targets(results) if t["target"].startswith("large drain")]
